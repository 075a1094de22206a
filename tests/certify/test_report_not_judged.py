"""A PASS with checks that could not judge the subject (ClauseResult.not_judged, from an e2e test's not_judged
notes) never reads as a plain PASS in any report file: report.md, report.html, junit.xml and result.json say
which checks were not judged and why; a report without any is written as before."""

import json
import xml.etree.ElementTree as ET

from device_conformance.certify.clauses import Clause
from device_conformance.certify.report import write_report
from device_conformance.certify.report_text import ran_line, verdict_text
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Certification, ClauseResult, Subject

NO_CDI = "CDI checks: NOT APPLICABLE: the driver prepared claim c with no CDI devices (<dra/v1> api.proto)"
NO_DEVICES = "devices answered: NOT APPLICABLE: the driver answered no devices"


def clause(name):
    return Clause(f"suites/dra/m.py::{name}", name, f"rule of {name}", "suites/dra/m.py")


def certification(partly=True):
    notes = [NO_CDI, NO_DEVICES] if partly else []
    return Certification(
        Subject("dra-driver", "nri-driver", "1.0"),
        ["DRA kubelet plugin API v1"],
        [
            ClauseResult(clause("test_partly"), PASS, "as required", ["cdi_devices: []"], 1.0, not_judged=notes),
            ClauseResult(clause("test_whole"), PASS, "as required", [], 1.0),
            ClauseResult(clause("test_broken"), FAIL, "call: assert 1 == 2", [], 1.0),
            ClauseResult(clause("test_other"), NOT_APPLICABLE, "a fake's test", [], 0.0),
        ],
        started=1_700_000_000.0,
    )


def test_only_a_pass_with_notes_is_partly_judged():
    cert = certification()
    assert [r.clause.title for r in cert.partly_judged()] == ["test_partly"]
    assert verdict_text(cert.results[0]) == "PASS; not judged: 2 checks"
    assert verdict_text(cert.results[1]) == "PASS"
    one = ClauseResult(clause("t"), PASS, "as required", not_judged=[NO_CDI])
    assert verdict_text(one) == "PASS; not judged: 1 check"
    failed = ClauseResult(clause("t"), FAIL, "boom", not_judged=[NO_CDI])
    assert not failed.partly_judged and verdict_text(failed) == FAIL
    assert ran_line(cert) == (
        "Ran 3 of 4 clauses: 2 passed (1 of them with checks not judged), 1 failed; 1 NOT APPLICABLE (not run)."
    )


def test_report_md_shows_the_checks_not_judged(tmp_path):
    markdown = write_report(certification(), tmp_path)["report.md"].read_text()
    assert "- Result: **FAILED**: 2 PASS, 1 FAIL, 1 NOT APPLICABLE (1 PASS with checks not judged)" in markdown
    row = next(line for line in markdown.splitlines() if line.startswith("| suites/dra/m.py::test_partly |"))
    assert row == (
        "| suites/dra/m.py::test_partly | **PASS; not judged: 2 checks** | rule of test_partly | as required; "
        f"not judged: {NO_CDI}; {NO_DEVICES} |"
    )
    assert "| suites/dra/m.py::test_whole | **PASS** |" in markdown
    assert "### suites/dra/m.py::test_partly: test_partly (PASS; not judged: 2 checks)" in markdown
    assert f"- Not judged: {NO_CDI}\n- Not judged: {NO_DEVICES}\n" in markdown


def test_junit_keeps_the_pass_and_lists_the_checks_not_judged(tmp_path):
    suite = ET.parse(write_report(certification(), tmp_path)["junit.xml"]).getroot()
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["partly_judged"] == "1"
    cases = {c.get("name").split("::")[-1]: c for c in suite.iter("testcase")}
    partly = cases["test_partly: test_partly"]
    assert partly.find("failure") is None and partly.find("skipped") is None
    assert [(p.get("name"), p.get("value")) for p in partly.find("properties")] == [
        ("not_judged", NO_CDI),
        ("not_judged", NO_DEVICES),
    ]
    assert partly.find("system-out").text.splitlines()[2:] == [
        f"not judged: {NO_CDI}",
        f"not judged: {NO_DEVICES}",
        "cdi_devices: []",
    ]
    assert cases["test_whole: test_whole"].find("properties") is None


def test_report_html_badges_and_lists_the_checks_not_judged(tmp_path):
    html = write_report(certification(), tmp_path)["report.html"].read_text()
    assert html.count('<span class="verdict NA">NOT JUDGED: 2 CHECKS</span>') == 2  # row and section
    assert (
        html.count("<li>CDI checks: NOT APPLICABLE: the driver prepared claim c with no CDI devices (&lt;dra/v1&gt;")
        == 2
    )
    assert "1 PASS with checks not judged" in html


def test_result_json_has_the_notes_of_each_clause_and_their_count(tmp_path):
    result = json.loads(write_report(certification(), tmp_path)["result.json"].read_text())
    assert result["partly_judged"] == 1
    assert {c["title"]: c["not_judged"] for c in result["clauses"]} == {
        "test_partly": [NO_CDI, NO_DEVICES],
        "test_whole": [],
        "test_broken": [],
        "test_other": [],
    }


def test_a_report_without_checks_not_judged_says_nothing_of_them(tmp_path):
    paths = write_report(certification(partly=False), tmp_path)
    for name in ("report.md", "report.html", "junit.xml"):
        assert "not judged" not in paths[name].read_text().lower(), name
    assert "partly_judged" not in paths["junit.xml"].read_text()
