"""The session cluster fixture brings a failed cluster up once more, then gives up for the worker.

A fake provider (in the pytester conftest) fails its first bring-ups as told per worker, and writes each
up/down to a file, so the tests see the whole sequence: every failed cluster torn down before the next
bring-up, each failure said with its cause, and a worker that gave up handed no further module.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from device_conformance.fixtures.cluster import TEST_FAIL_BRINGUPS_ENV
from xdist_worker import Worker

from device_conformance.providers.local.provider import LocalProvider
from device_conformance.pytest_plugin.bringup_report import LOST_WORKERS, record_lines
from device_conformance.pytest_plugin.group_scheduling import JustInTimeGroupScheduling

pytest_plugins = ["pytester"]

CONFTEST = """
import json
import os
import re
import os
from pathlib import Path

from device_conformance.errors import BadInput, ConformanceError
from device_conformance.expectations.versions import KubeVersion
from device_conformance.fixtures.session import PLAN, SessionPlan, session_settings
from device_conformance.providers.base import ClusterHandle

FAILURES = json.loads(os.environ["FAKE_BRINGUP_FAILURES"])  # worker id -> failed bring-ups, or "down fails"


class FakeProvider:
    name = "fake"

    def __init__(self, worker):
        self.worker = worker
        self.ups = 0
        self.events = Path(os.environ["FAKE_EVENTS"]) / f"events-{worker}.log"

    def _event(self, text):
        with self.events.open("a") as file:
            file.write(text + "\\n")

    def up(self):
        self.ups += 1
        self._event(f"up {self.ups}")
        failures = FAILURES.get(self.worker, 0)
        if failures == "refused":
            raise BadInput(
                "--feature-gates 'apiserver:Foo=true': kube-apiserver refuses gate Foo at start-up", "drop Foo"
            )
        if failures == "down fails" or self.ups <= failures:
            raise ConformanceError(f"port 2379 taken (bring-up {self.ups})\\nmore detail")
        return ClusterHandle("c", "fake", Path("/nonexistent"), KubeVersion.parse("1.37.1"))

    def down(self):
        self._event("down")
        if FAILURES.get(self.worker) == "down fails":
            raise OSError("device or resource busy")

    def keep(self):
        return "kept"

    def journal(self, message):
        self._event(f"journal: {message}")


def pytest_configure(config):
    worker = getattr(config, "workerinput", {}).get("workerid", "main")
    # A plan in place: nothing is prepared (fixtures/session.py _plan); the settings are the real defaults.
    config.stash[PLAN] = SessionPlan(session_settings(config), FakeProvider(worker))
"""

MODULE = "def test_1(cluster):\n    pass\n\ndef test_2(cluster):\n    pass\n\ndef test_3(cluster):\n    pass\n"


def run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, failures: dict, *args: str):
    monkeypatch.setenv("FAKE_BRINGUP_FAILURES", json.dumps(failures))
    monkeypatch.setenv("FAKE_EVENTS", str(pytester.path))
    monkeypatch.setenv("DEVICE_CONFORMANCE_STATE", str(pytester.path / "state"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=MODULE, test_b=MODULE, test_c=MODULE)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rE", *args)


def events(pytester: pytest.Pytester, worker: str, journal: bool = True) -> list[str]:
    path = pytester.path / f"events-{worker}.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [line for line in lines if journal or not line.startswith("journal: ")]


def test_a_failed_bring_up_is_torn_down_said_and_brought_up_again(pytester, monkeypatch):
    result = run(pytester, monkeypatch, {"main": 1})
    result.assert_outcomes(passed=9)
    assert result.ret == 0
    line = "main: cluster bring-up 1 of 2 failed after 0.0 s: port 2379 taken (bring-up 1)"
    assert events(pytester, "main") == ["up 1", f"journal: {line}", "down", "up 2", "down"]
    result.stdout.fnmatch_lines(
        [
            f"[[]device-conformance] {line}",  # at once
            "*= cluster bring-ups that failed =*",  # and again at the end
            line,
            "main: cluster up at bring-up 2; the worker went on",
        ]
    )


def test_without_xdist_two_failures_stop_the_run_with_both_causes(pytester, monkeypatch):
    result = run(pytester, monkeypatch, {"main": 5})
    assert result.ret == 3
    assert events(pytester, "main") == [
        "up 1",
        "journal: main: cluster bring-up 1 of 2 failed after 0.0 s: port 2379 taken (bring-up 1)",
        "down",
        "up 2",
        "journal: main: cluster bring-up 2 of 2 failed after 0.0 s: port 2379 taken (bring-up 2)",
        "down",
    ]
    result.stdout.fnmatch_lines(
        [
            "*could not bring up a cluster for the run: 2 bring-ups failed",
            "--- bring-up 1 (after 0.0 s):",
            "port 2379 taken (bring-up 1)",
            "more detail",
            "--- bring-up 2 (after 0.0 s):",
            "port 2379 taken (bring-up 2)",
        ]
    )


def test_a_teardown_that_fails_after_a_failed_bring_up_ends_the_tries(pytester, monkeypatch):
    result = run(pytester, monkeypatch, {"main": "down fails"})
    assert result.ret == 3
    assert events(pytester, "main") == [
        "up 1",
        "journal: main: cluster bring-up 1 of 2 failed after 0.0 s: port 2379 taken (bring-up 1)",
        "down",
    ]
    result.stdout.fnmatch_lines(
        [
            "*main: teardown of the failed cluster failed: OSError: device or resource busy",
            "*could not bring up a cluster for the run: 1 bring-ups failed",
        ]
    )


def test_a_worker_that_fails_twice_errors_its_module_once_with_the_causes_and_takes_no_other(pytester, monkeypatch):
    result = run(pytester, monkeypatch, {"gw0": 2}, "-n", "2", "--dist", "loadgroup")
    # gw0's first module errors (the first test with the causes, the other two pointing to it); gw1 runs the rest.
    result.assert_outcomes(passed=6, errors=3)
    assert result.ret == 1
    assert events(pytester, "gw0", journal=False) == ["up 1", "down", "up 2", "down"]
    assert events(pytester, "gw1") == ["up 1", "down"]
    first = next(line for line in result.stdout.lines if line.startswith("ERROR ")).split()[1]
    # The ERRORS section only: the short summary repeats each message whole where pytest sees a CI (env CI),
    # and cuts it to the terminal's width elsewhere.
    output = result.stdout.str().split("= ERRORS =")[1].split("= cluster bring-ups that failed =")[0]
    assert output.count("could not bring up a cluster for worker gw0 (it takes no further module)") == 1
    assert output.count("port 2379 taken (bring-up 2)\nmore detail") == 1  # the causes: in the first error only
    pointer = f"not run: worker gw0 has no cluster, its 2 bring-ups failed (the causes are in the error of {first})"
    assert output.count(pointer) == 2
    result.stdout.fnmatch_lines(
        [
            "*= cluster bring-ups that failed =*",
            "gw0: cluster bring-up 1 of 2 failed after 0.0 s: port 2379 taken (bring-up 1)",
            "gw0: cluster bring-up 2 of 2 failed after 0.0 s: port 2379 taken (bring-up 2)",
            f"gw0: gave up on its cluster; the causes are in the error of {first}; 2 more of its tests errored "
            "pointing there; it was handed no further module",
        ]
    )


def test_a_worker_that_fails_once_goes_on_and_the_run_says_so(pytester, monkeypatch):
    result = run(pytester, monkeypatch, {"gw1": 1}, "-n", "2", "--dist", "loadgroup")
    result.assert_outcomes(passed=9)
    assert result.ret == 0
    assert events(pytester, "gw1", journal=False) == ["up 1", "down", "up 2", "down"]
    result.stdout.fnmatch_lines(
        [
            "*= cluster bring-ups that failed =*",
            "gw1: cluster bring-up 1 of 2 failed after 0.0 s: port 2379 taken (bring-up 1)",
            "gw1: cluster up at bring-up 2; the worker went on",
        ]
    )


def test_the_test_seam_fails_a_bring_up_after_the_cluster_came_up(pytester, monkeypatch):
    monkeypatch.setenv(TEST_FAIL_BRINGUPS_ENV, "main=1,gw3=2")
    result = run(pytester, monkeypatch, {})
    result.assert_outcomes(passed=9)
    line = (
        f"main: cluster bring-up 1 of 2 failed after 0.0 s: {TEST_FAIL_BRINGUPS_ENV}=main=1,gw3=2: bring-up 1 of "
        "main failed on purpose after its cluster came up (test seam)"
    )
    # The cluster that came up is torn down before the second bring-up.
    assert events(pytester, "main") == ["up 1", f"journal: {line}", "down", "up 2", "down"]


def test_the_local_provider_journals_under_the_state_root(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_STATE", str(tmp_path))
    LocalProvider.journal(None, "gw2: cluster bring-up 1 of 2 failed after 3.0 s: boom")  # type: ignore[arg-type]
    text = (tmp_path / "cleanups.log").read_text()
    assert re.fullmatch(
        rf"\d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{6}}Z pid {os.getpid()}: "
        r"gw2: cluster bring-up 1 of 2 failed after 3\.0 s: boom\n",
        text,
    ), text


def test_without_our_scheduler_the_summary_does_not_claim_the_worker_was_handed_nothing_more():
    record = {"worker": "gw4", "lost": True, "first_test": "t.py::a", "failures": []}
    assert record_lines(record, refused=0) == [
        "gw4: gave up on its cluster; the causes are in the error of t.py::a; 0 more of its tests errored pointing "
        "there"
    ]


@pytest.fixture
def scheduled(pytester):
    collection = [f"suites/{module}.py::t{n}@{module}" for module in "abcd" for n in (1, 2)]
    config = pytester.parseconfig("--tx", "2*popen", "--dist", "loadgroup")
    config.stash[LOST_WORKERS] = set()
    scheduler = JustInTimeGroupScheduling(config)
    workers = [Worker("gw0"), Worker("gw1")]
    for worker in workers:
        scheduler.add_node(worker)
    for worker in workers:
        scheduler.add_node_collection(worker, collection)
    scheduler.schedule()
    return scheduler, config, workers


def test_a_worker_without_cluster_gets_no_further_group_while_another_has_one(scheduled):
    scheduler, config, (gw0, gw1) = scheduled
    assert (gw0.sent, gw1.sent) == ([[0, 1]], [[2, 3]])
    config.stash[LOST_WORKERS].add("gw0")
    scheduler.mark_test_complete(gw0, 0)  # its group's last test left: it would get group c now
    assert (gw0.sent, gw0.shutting_down) == ([[0, 1]], True)
    scheduler.mark_test_complete(gw0, 1)
    scheduler.mark_test_complete(gw1, 2)
    assert gw1.sent == [[2, 3], [4, 5]]
    scheduler.mark_test_complete(gw1, 3)
    scheduler.mark_test_complete(gw1, 4)
    assert gw1.sent == [[2, 3], [4, 5], [6, 7]]


def test_when_every_worker_lost_its_cluster_they_still_take_the_groups_so_the_run_ends(scheduled):
    scheduler, config, (gw0, gw1) = scheduled
    config.stash[LOST_WORKERS].update({"gw0", "gw1"})
    scheduler.mark_test_complete(gw0, 0)
    scheduler.mark_test_complete(gw1, 2)
    assert (gw0.sent, gw1.sent, gw0.shutting_down, gw1.shutting_down) == (
        [[0, 1], [4, 5]],
        [[2, 3], [6, 7]],
        False,
        False,
    )


def test_a_bring_up_refusing_the_users_input_is_not_tried_again_and_stops_as_a_usage_error(pytester, monkeypatch):
    """A component refusing a knob (settings.ComponentKnobs.refusal) would refuse it at every bring-up."""
    result = run(pytester, monkeypatch, {"main": "refused"})
    assert result.ret == 4
    assert events(pytester, "main") == [
        "up 1",
        "journal: main: cluster bring-up 1 of 2 failed after 0.0 s: --feature-gates 'apiserver:Foo=true': "
        "kube-apiserver refuses gate Foo at start-up",
        "down",
    ]
    result.stdout.fnmatch_lines(
        ["*device-conformance settings: --feature-gates 'apiserver:Foo=true': kube-apiserver refuses gate Foo*"]
    )
