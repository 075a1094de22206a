"""suite_durations: the measured time of each suite test, read from the JUnit XML of whole runs, that
`--dist loadgroup` hands modules out by (longest first)."""

from __future__ import annotations

import json
from pathlib import Path

from device_conformance.core import suite_durations

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="suites.dra.test_dra_races" name="test_a@suites/dra/test_dra_races.py" time="{a}"/>
<testcase classname="suites.dra.test_dra_races" name="test_b[pod-gone]@suites/dra/test_dra_races.py" time="7.25">
<skipped type="pytest.xfail" message="kubernetes#131513"/></testcase>
<testcase classname="suites.smoke.test_smoke" name="test_c" time="0.004">
<skipped type="pytest.skip" message="needs 1.34"/></testcase>
</testsuite></testsuites>
"""


def junit(tmp_path: Path, name: str, a: float) -> Path:
    path = tmp_path / name
    path.write_text(JUNIT.format(a=a))
    return path


def test_each_case_is_named_by_its_node_id_without_the_xdist_group(tmp_path):
    assert suite_durations.from_junit(junit(tmp_path, "run-01.xml", 12.5)) == {
        "suites/dra/test_dra_races.py::test_a": 12.5,
        "suites/dra/test_dra_races.py::test_b[pod-gone]": 7.25,
        "suites/smoke/test_smoke.py::test_c": 0.004,
    }


def test_the_median_of_the_runs_is_kept_per_test(tmp_path):
    runs = [suite_durations.from_junit(junit(tmp_path, f"run-{i}.xml", a)) for i, a in enumerate((10, 90, 14))]
    assert suite_durations.median_of_runs(runs) == {
        "suites/dra/test_dra_races.py::test_a": 14.0,
        "suites/dra/test_dra_races.py::test_b[pod-gone]": 7.2,
        "suites/smoke/test_smoke.py::test_c": 0.0,
    }


def test_load_reads_the_file_under_the_root_and_nothing_without_it(tmp_path):
    assert suite_durations.load(tmp_path) == {}
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "durations.json").write_text(json.dumps({"suites/x.py::test_y": 3}))
    assert suite_durations.load(tmp_path) == {"suites/x.py::test_y": 3.0}


def test_the_committed_durations_name_only_tests_that_exist():
    """A renamed or deleted test leaves a stale entry: `make durations` after a whole run writes the file anew."""
    root = Path(__file__).resolve().parents[2]
    stale = []
    for nodeid in suite_durations.load(root):
        path, name = nodeid.split("::", 1)
        source = root / path
        function = name.split("[", 1)[0]
        if not source.is_file() or f"def {function}(" not in source.read_text():
            stale.append(nodeid)
    assert stale == [], f"suites/durations.json names tests that are gone: {stale}; run `make durations`"
