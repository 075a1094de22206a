"""`--dist loadgroup` with a worker's next group handed over only when the worker needs it.

xdist's scheduler (xdist/scheduler/loadscope.py, `_reschedule`) gives a worker its next group as soon as the
group it runs has two tests left to finish, and at the start gives a second group to every worker whose first
has two tests or fewer. A group's last tests can be its longest (a module's shared wait is paid by the test
that first needs it), so the group queued behind them waits for minutes while other workers sit idle: with 8
workers, the whole suite (2026-11-24) went on for about 80 s with the CPU 98% idle before it ended.

Here a worker gets its next group when one test of its group is left. It cannot wait for less: a worker runs
a test only once it knows the next one (xdist/remote.py `run_one_test`, pytest's `nextitem`), so with one
test left it asks, and the next group's first index arrives with the report of the test before.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling

from device_conformance.pytest_plugin.bringup_report import LOST_WORKERS

TESTS_LEFT_WHEN_NEXT_GROUP_IS_SENT = 1


class JustInTimeGroupScheduling(LoadGroupScheduling):
    """LoadGroupScheduling whose workers take their next group at their current group's last test."""

    def _reschedule(self, node: Any) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) > TESTS_LEFT_WHEN_NEXT_GROUP_IS_SENT:
            return
        if self._lost(node) and any(not other.shutting_down and not self._lost(other) for other in self.nodes):
            # Its cluster is gone (fixtures/cluster.py gave up): the group it holds errors, the rest goes to
            # workers with a cluster. With none left it takes them anyway, so the run ends, every test reported.
            node.shutdown()
            return
        self._assign_work_unit(node)

    def _lost(self, node: Any) -> bool:
        return node.gateway.id in self.config.stash.get(LOST_WORKERS, set())


# tryfirst: xdist's own implementation (DSession, registered after this module) returns its default scheduler.
@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadGroupScheduling | None:
    """On the xdist controller: our scheduler for `--dist loadgroup`; xdist's own for every other mode."""
    if config.getvalue("dist") == "loadgroup":
        return JustInTimeGroupScheduling(config, log)
    return None
