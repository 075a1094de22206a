"""Cluster bring-up failures of the run's workers: said when they happen, listed again at the end.

A worker's session cluster fixture (fixtures/cluster.py) brings its cluster up a second time when the first
bring-up fails, and gives up after the second failure. Either way the setup report of the test that first asked
for the cluster carries the worker's record to this process (the xdist controller, or the only pytest process):
each failure is said at once and listed again in a terminal-summary section, so a bring-up that only worked on
its second try stays visible. A worker that gave up is handed no further module (group_scheduling.py reads
LOST_WORKERS); the tests it held error, pointing to the first, which carries the causes.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from device_conformance.fixtures.cluster import BRINGUP_ATTEMPTS, BRINGUP_REPORT_ATTR, NO_CLUSTER_REPORT_ATTR
from device_conformance.fixtures.session import say

# The ids of the workers that gave up on their cluster (gw0, ...; "main" without xdist).
LOST_WORKERS = pytest.StashKey[set[str]]()
SECTION = "cluster bring-ups that failed"


class BringupReport:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.records: dict[str, dict[str, Any]] = {}
        self.refused: Counter[str] = Counter()  # tests a worker without cluster errored at once
        config.stash[LOST_WORKERS] = set()
        # Only our scheduler (--dist loadgroup) stops handing modules to a worker without cluster.
        self.scheduled_by_us = getattr(config.option, "dist", "no") == "loadgroup"

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        record = getattr(report, BRINGUP_REPORT_ATTR, None)
        if record is not None:
            self.records[record["worker"]] = record
            if record["lost"]:
                self.config.stash[LOST_WORKERS].add(record["worker"])
            for line in record_lines(record):
                say(self.config, line)
        worker = getattr(report, NO_CLUSTER_REPORT_ATTR, None)
        if worker is not None:
            self.refused[worker] += 1

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.records:
            return
        terminalreporter.section(SECTION, sep="=", red=True, bold=True)
        for worker in sorted(self.records):
            lines = record_lines(
                self.records[worker], refused=self.refused[worker], scheduled_by_us=self.scheduled_by_us
            )
            for line in lines:
                terminalreporter.write_line(line)


def record_lines(record: dict[str, Any], refused: int | None = None, scheduled_by_us: bool = False) -> list[str]:
    """One line per failed bring-up with its cause, then how the worker went on."""
    worker = record["worker"]
    lines = [
        f"{worker}: cluster bring-up {failure['attempt']} of {BRINGUP_ATTEMPTS} failed after "
        f"{failure['seconds']:.1f} s: {failure['headline']}"
        for failure in record["failures"]
    ]
    if not record["lost"]:
        lines.append(f"{worker}: cluster up at bring-up {len(record['failures']) + 1}; the worker went on")
        return lines
    gave_up = f"{worker}: gave up on its cluster; the causes are in the error of {record['first_test']}"
    if refused is not None:
        gave_up += f"; {refused} more of its tests errored pointing there"
    if scheduled_by_us and worker != "main":
        gave_up += "; it was handed no further module"
    lines.append(gave_up)
    return lines


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # a worker's records travel to the controller on its reports
    config.pluginmanager.register(BringupReport(config), "device-conformance-bringup-report")
