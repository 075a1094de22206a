"""The loadgroup scheduler: a worker gets its next group only when one test of its group is left."""

from __future__ import annotations

import pytest
from xdist_worker import Worker

from device_conformance.pytest_plugin.group_scheduling import JustInTimeGroupScheduling

pytest_plugins = ["pytester"]


# Two groups of three tests (the first: a module whose last test is long), then two groups of one test.
COLLECTION = [
    "suites/a.py::t1@a", "suites/a.py::t2@a", "suites/a.py::t3@a",
    "suites/b.py::t1@b", "suites/b.py::t2@b", "suites/b.py::t3@b",
    "suites/c.py::t1@c",
    "suites/d.py::t1@d",
]  # fmt: skip


@pytest.fixture
def scheduled(pytester):
    config = pytester.parseconfig("--tx", "2*popen", "--dist", "loadgroup")
    scheduler = JustInTimeGroupScheduling(config)
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, COLLECTION)
    scheduler.schedule()
    return scheduler, workers


def test_each_worker_starts_with_one_group(scheduled):
    _, (gw0, gw1) = scheduled
    assert (gw0.sent, gw1.sent) == ([[0, 1, 2]], [[3, 4, 5]])


def test_the_next_group_goes_to_the_worker_at_its_last_test_not_before(scheduled):
    scheduler, (gw0, gw1) = scheduled
    scheduler.mark_test_complete(gw0, 0)
    assert gw0.sent == [[0, 1, 2]], "two tests of group a are left: xdist's own scheduler sends group c here"
    scheduler.mark_test_complete(gw0, 1)
    assert gw0.sent == [[0, 1, 2], [6]]
    # gw1, done with b's first two tests while gw0 runs a's long last test, gets d rather than waiting.
    scheduler.mark_test_complete(gw1, 3)
    scheduler.mark_test_complete(gw1, 4)
    assert gw1.sent == [[3, 4, 5], [7]]


def test_a_worker_is_shut_down_when_no_group_is_left(scheduled):
    scheduler, (gw0, gw1) = scheduled
    for index in (0, 1):
        scheduler.mark_test_complete(gw0, index)
    for index in (3, 4):
        scheduler.mark_test_complete(gw1, index)
    scheduler.mark_test_complete(gw0, 2)
    assert (gw0.shutting_down, gw1.shutting_down) == (True, False)
