"""Vendor mode with a black-box test that passed with a check it could not judge (fixtures/reports.py not_judged):
the vendor report shows that PASS with the check not judged, pytest's JUnit XML carries the note, and the vendor
mode self-test (suites/vendor_mode/test_vendor_mode_on_fakes.py) reads it and requires exactly the notes a run
expects. Nested pytest runs of a small module, no cluster."""

from __future__ import annotations

import importlib.util
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
NOTE = "CDI checks: NOT APPLICABLE: the driver prepared claim c with no CDI devices (zero or more devices)"
SOURCE = f"""
import pytest
from device_conformance.fixtures.reports import not_judged

pytestmark = pytest.mark.vendor_blackbox("dra-driver")


def test_partly(request):
    '''Prepared once, unprepared once; the CDI devices reach the container.'''
    request.node.user_properties.append(("cdi_devices", []))
    not_judged(request.node, "CDI checks", {NOTE.split(": NOT APPLICABLE: ")[1]!r})


def test_whole():
    '''Judged whole.'''
"""


@pytest.fixture(scope="module")
def on_fakes():
    """suites/vendor_mode/test_vendor_mode_on_fakes.py as a module (suites/ is not a package)."""
    path = ROOT / "suites" / "vendor_mode" / "test_vendor_mode_on_fakes.py"
    spec = importlib.util.spec_from_file_location("vendor_mode_on_fakes", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["vendor_mode_on_fakes"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def vendor_run(pytester):
    """The module run in vendor mode against a DRA driver never started (no test asks for it): (vendor report
    folder, JUnit XML path, the run's output)."""
    pytester.makepyfile(test_subject=SOURCE)
    report, junit = pytester.path / "vendor-report", pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--vendor-dra-driver",
        "drv.example.com",
        "--vendor-command",
        "run-driver {driver}",
        f"--vendor-report={report}",
        f"--junitxml={junit}",
    )
    result.assert_outcomes(passed=2)
    return report, junit, result


def test_the_vendor_report_shows_the_pass_with_its_check_not_judged(vendor_run):
    report, _, result = vendor_run
    result.stdout.fnmatch_lines(
        [
            "*vendor report in *: 2 PASS, 0 FAIL, 0 NOT APPLICABLE (1 PASS with checks not judged)",
            f"*test_subject.py::test_partly: not judged: {NOTE}",
        ]
    )
    markdown = (report / "report.md").read_text()
    rule = "Prepared once, unprepared once; the CDI devices reach the container."
    assert f"| **PASS; not judged: 1 check** | {rule} | as required; not judged: {NOTE} |" in markdown
    assert "| test_subject.py::test_whole | **PASS** | Judged whole. | as required |" in markdown
    assert "A PASS with checks not judged judged the rest of its test" in markdown
    clauses = {c["title"]: c for c in json.loads((report / "result.json").read_text())["clauses"]}
    assert clauses["test_partly"]["not_judged"] == [NOTE]
    # The note is not evidence as well; the test's other properties are.
    assert clauses["test_partly"]["evidence"] == ["cdi_devices: []"]
    suite = ET.parse(report / "junit.xml").getroot()
    partly = next(c for c in suite.iter("testcase") if c.get("name").endswith("test_partly"))
    assert [(p.get("name"), p.get("value")) for p in partly.iter("property")] == [("not_judged", NOTE)]


def test_the_self_test_reads_the_note_from_pytests_junit(vendor_run, on_fakes):
    _, junit, _ = vendor_run
    got = on_fakes.outcomes(junit)
    assert got == {
        "test_subject.py::test_partly": on_fakes.Outcome("passed", not_judged=(NOTE,)),
        "test_subject.py::test_whole": on_fakes.PASSED,
    }
    expected = {"test_subject.py::test_partly": on_fakes.passed_not_judging("CDI checks: NOT APPLICABLE: the driver")}
    assert on_fakes.differences(expected | {"test_subject.py::test_whole": on_fakes.PASSED}, got) == []
    # A plain pass expected where the test could not judge a check, and the other way round: both differ.
    rows = on_fakes.differences(
        {
            "test_subject.py::test_partly": on_fakes.PASSED,
            "test_subject.py::test_whole": expected["test_subject.py::test_partly"],
        },
        got,
    )
    assert rows == [
        f"- test_subject.py::test_partly: expected passed, got passed; not judged: [{NOTE!r}]",
        "- test_subject.py::test_whole: expected passed; not judged: ['CDI checks: NOT APPLICABLE: the driver'], "
        "got passed",
    ]


def test_expected_notes_match_one_for_one(on_fakes):
    match = on_fakes.notes_match
    assert match(("A: x", "B: y"), ("B: y z", "A: x z"))
    assert not match(("A: x",), ("A: x 1", "A: x 2")), "a second note nobody expects"
    assert not match(("A: x", "A: x"), ("A: x 1",)), "an expected note missing"
    assert match((), ()) and not match((), ("A: x",))


def test_the_no_devices_pattern_requires_the_cdi_notes_a_vacuous_pass_lacks(on_fakes):
    run = next(r for r in on_fakes.RUNS if r.id == "dra-prepare-no-devices")
    expected = on_fakes.expected_outcomes(run)
    noted = {test for test, outcome in expected.items() if outcome.not_judged}
    assert noted == set(on_fakes.CDI_TESTS) and len(noted) == 11
    vacuous = {test: on_fakes.PASSED for test in noted}
    assert len(on_fakes.differences({t: expected[t] for t in noted}, vacuous)) == 11
    blackbox = "test_dra_vendor_blackbox.py::test_claim_is_prepared_once_reaches_the_container_and_is_unprepared_once"
    assert expected[blackbox].not_judged == (
        "devices answered: NOT APPLICABLE: podresources for claim",
        "CDI checks: NOT APPLICABLE: the driver prepared claim",
    )
    static = next(r for r in on_fakes.RUNS if r.id == "dra-cdi-static-per-device")
    assert {t for t, o in on_fakes.expected_outcomes(static).items() if o.not_judged} == set(on_fakes.CDI_REMOVAL_TESTS)
