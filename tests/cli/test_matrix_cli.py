"""`device-conformance matrix`: JUnit outcomes counted per suite, and the table (no cluster: the runs are
the matrix's own e2e; here only the counting and rendering are checked)."""

from collections import Counter

import pytest

from device_conformance.cli import matrix
from device_conformance.core.errors import BadInput

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" errors="1" failures="1" skipped="3" tests="7">
<testcase classname="suites.device_plugin.test_admission" name="test_a" time="1.0"/>
<testcase classname="suites.device_plugin.test_admission" name="test_b" time="1.0">
  <failure message="assert 1 == 2">boom</failure></testcase>
<testcase classname="suites.device_plugin.test_checkpoint" name="test_c" time="1.0">
  <skipped type="pytest.xfail" message="known upstream bug kubernetes#126943"/></testcase>
<testcase classname="suites.dra.test_dra_health" name="test_d" time="1.0">
  <skipped type="pytest.skip" message="needs 1.34"/></testcase>
<testcase classname="suites.dra.test_dra_health" name="test_e" time="1.0">
  <error message="fixture failed">x</error></testcase>
<testcase classname="suites.smoke.test_cluster" name="test_f" time="1.0"/>
<testcase classname="suites.taints.test_device_taints" name="test_g" time="1.0">
  <skipped type="pytest.skip" message="gate"/></testcase>
</testsuite></testsuites>
"""


def test_outcomes_are_counted_per_suite(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    assert matrix.count_outcomes(junit) == {
        "device_plugin": Counter(passed=1, failed=1, xfailed=1),
        "dra": Counter(skipped=1, failed=1),
        "smoke": Counter(passed=1),
        "taints": Counter(skipped=1),
    }


def test_table_has_one_row_per_version_and_a_verdict(tmp_path):
    results = {
        "1.36.4": {"dra": Counter(passed=3, xfailed=1), "smoke": Counter(passed=2)},
        "1.37.1": {"dra": Counter(passed=3, failed=1), "smoke": Counter(passed=2)},
        "1.31.14": {},
    }
    table = matrix.render(results, {"1.31.14": "setup failed: see x/setup.log"})
    assert table.splitlines()[2:] == [
        "| Kubernetes | dra | smoke | verdict |",
        "| --- | --- | --- | --- |",
        "| 1.36.4 | 3/0/1/0 | 2/0/0/0 | green |",
        "| 1.37.1 | 3/1/0/0 | 2/0/0/0 | 1 failed |",
        "| 1.31.14 | - | - | setup failed: see x/setup.log |",
    ]


def test_versions_are_parsed_and_checked():
    assert [str(v) for v in matrix.parse_versions("1.36.4, 1.37.1")] == ["1.36.4", "1.37.1"]
    with pytest.raises(BadInput, match="names no release"):
        matrix.parse_versions(" , ")
    with pytest.raises(BadInput, match="not a Kubernetes release version"):
        matrix.parse_versions("1.37")
