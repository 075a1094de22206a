"""bench/soak.py, the flake check: outcomes read from JUnit XML, which clusters a run owned, its table."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

SOAK_PATH = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
  <testcase classname="suites.smoke.test_cluster" name="test_ok" time="1.0"/>
  <testcase classname="suites.dra.test_x" name="test_fails" time="2.0">
    <failure message="AssertionError: Prepare calls: expected 1, got 2&#10;more">trace</failure></testcase>
  <testcase classname="suites.dra.test_x" name="test_setup_error" time="0.1"><error message="">boom
line two</error></testcase>
  <testcase classname="suites.dp.test_y" name="test_skip" time="0">
    <skipped type="pytest.skip" message="needs 1.35"/></testcase>
  <testcase classname="suites.dp.test_y" name="test_bug" time="3">
    <skipped type="pytest.xfail" message="kubernetes#116125"/></testcase>
</testsuite></testsuites>
"""


def test_outcomes_are_counted_per_kind_and_failures_name_test_and_first_line(soak, tmp_path):
    path = tmp_path / "junit.xml"
    path.write_text(JUNIT)
    counts, failures = soak.junit_outcomes(path)
    assert counts == {"passed": 1, "failed": 1, "error": 1, "xfailed": 1, "skipped": 1}
    assert failures == [
        "suites.dra.test_x::test_fails: AssertionError: Prepare calls: expected 1, got 2",
        "suites.dra.test_x::test_setup_error: boom",
    ]


def test_a_cluster_is_ours_only_when_its_owner_carries_the_runs_tag(soak, tmp_path, monkeypatch):
    monkeypatch.setattr(soak, "state_root", lambda: tmp_path)
    tag = f"soak-test-{os.getpid()}"
    ours = subprocess.Popen(["sleep", "60"], env={**os.environ, soak.inventory.TAG_ENV: tag})
    other = subprocess.Popen(["sleep", "60"], env={**os.environ, soak.inventory.TAG_ENV: tag + "-other"})
    try:
        for run_id, pid in (("r000001", ours.pid), ("r000002", other.pid), ("r000003", 2**22 + 1)):
            (tmp_path / "runs" / run_id).mkdir(parents=True)
            (tmp_path / "runs" / run_id / "state.json").write_text(json.dumps({"owner_pid": pid}))
        (tmp_path / "runs" / "r000004").mkdir()
        (tmp_path / "runs" / "r000004" / "state.json").write_text("{not json")
        owners = soak.ClusterOwners(tag)
        owners.read_once()
        assert owners.run_ids == {"r000001"}
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()


def test_a_run_is_green_only_with_exit_0_no_failure_and_nothing_left(soak):
    counts = dict.fromkeys(soak.OUTCOMES, 0)
    assert soak.RunResult(1, 0, 10.0, counts).green
    assert not soak.RunResult(1, 1, 10.0, counts).green
    assert not soak.RunResult(1, 0, 10.0, counts, failures=["t: x"]).green
    assert not soak.RunResult(1, 0, 10.0, counts, left=["process pid 7: kubelet"]).green


def test_the_table_lists_every_run_then_the_failures_and_leftovers(soak):
    counts = {"passed": 150, "failed": 1, "error": 0, "xfailed": 6, "skipped": 2}
    results = [
        soak.RunResult(1, 0, 612.4, {**counts, "failed": 0}, bringups=["gw2 recovered at bring-up 2"]),
        soak.RunResult(2, 1, 640.0, counts, ["suites/dra/test_x.py::test_a: timed out"], ["mount /run/x"]),
    ]
    assert soak.table(results).splitlines() == [
        "| run | exit | wall | passed | failed | error | xfailed | skipped | left behind | bring-ups retried |",
        "|---|---|---|---|---|---|---|---|---|---|",
        "| 1 | 0 | 612 s | 150 | 0 | 0 | 6 | 2 | nothing | gw2 recovered at bring-up 2 |",
        "| 2 | 1 | 640 s | 150 | 1 | 0 | 6 | 2 | 1 | none |",
        "",
        "Failures:",
        "- run 2: suites/dra/test_x.py::test_a: timed out",
        "",
        "Left behind:",
        "- run 2: mount /run/x",
    ]


def test_a_retried_bring_up_is_read_from_the_runs_closing_section(soak):
    # The lines pytest_plugin/bringup_report.py writes (tests/fixtures/test_cluster_bringup_retry.py runs it).
    output = "\n".join(
        [
            "[device-conformance] gw0: cluster bring-up 1 of 2 failed after 3.0 s: etcd did not answer",
            "..........",
            "======================== cluster bring-ups that failed =========================",
            "gw0: cluster bring-up 1 of 2 failed after 3.0 s: etcd did not answer",
            "gw0: cluster up at bring-up 2; the worker went on",
            "gw3: cluster bring-up 1 of 2 failed after 0.1 s: port 2379 taken",
            "gw3: cluster bring-up 2 of 2 failed after 0.1 s: port 2379 taken",
            "gw3: gave up on its cluster; the causes are in the error of t.py::a; 2 more of its tests errored",
            "=========================== short test summary info ============================",
            "gw9: cluster up at bring-up 2; the worker went on",
        ]
    )
    assert soak.bringup_outcomes(output) == ["gw0 recovered at bring-up 2", "gw3 gave up"]
    assert soak.bringup_outcomes("== 3 passed in 1.0s ==") == []
    from device_conformance.pytest_plugin import bringup_report

    assert soak.SECTION == bringup_report.SECTION
