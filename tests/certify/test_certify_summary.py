"""`certify summary`: one table over report folders, red when any report failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from device_conformance.certify import summary
from device_conformance.certify.clauses import Clause
from device_conformance.certify.report import write_report
from device_conformance.certify.verdicts import PASS, Certification, ClauseResult, Subject
from device_conformance.cli.main import main
from device_conformance.core.errors import BadInput


def _report(
    folder: Path,
    *,
    passed: bool,
    fail: int = 0,
    name: str = "upstream sample-device-plugin",
    partly_judged: int | str | None = None,
) -> Path:
    """A result.json as certify writes it; `partly_judged` only where given (reports written before it existed
    have none)."""
    folder.mkdir(parents=True)
    result = {
        "subject": {"name": name, "version": "v1.37.1"},
        "mode": "e2e (the suites against the subject on a real cluster)",
        "counts": {"PASS": 6, "FAIL": fail, "NOT APPLICABLE": 55},
        "passed": passed,
    }
    if partly_judged is not None:
        result["partly_judged"] = partly_judged
    (folder / "result.json").write_text(json.dumps(result))
    return folder


def test_rows_come_from_every_report_folder_one_level_down(tmp_path):
    _report(tmp_path / "e2e-b", passed=True)
    _report(tmp_path / "e2e-a", passed=False, fail=1)
    table = summary.render(summary.read_reports(tmp_path))
    assert table.splitlines()[2:] == [
        "| e2e-a | upstream sample-device-plugin v1.37.1 | e2e | 6 | 1 | 55 | FAILED |",
        "| e2e-b | upstream sample-device-plugin v1.37.1 | e2e | 6 | 0 | 55 | PASSED |",
    ]


def test_the_command_is_red_when_any_report_failed(tmp_path, capsys):
    _report(tmp_path / "ok", passed=True)
    assert main(["certify", "summary", str(tmp_path)]) == 0
    _report(tmp_path / "bad", passed=False, fail=2)
    assert main(["certify", "summary", str(tmp_path)]) == 1
    assert "| bad | upstream sample-device-plugin v1.37.1 | e2e | 6 | 2 | 55 | FAILED |" in capsys.readouterr().out


def test_a_folder_without_reports_or_with_a_foreign_json_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match=r"no result.json in (.|\n)*fix: give a report folder"):
        summary.read_reports(tmp_path)
    (tmp_path / "result.json").write_text('{"tests": 3}')
    with pytest.raises(BadInput, match="is not a certification result"):
        summary.read_reports(tmp_path)


def test_a_subject_name_with_control_characters_is_printed_escaped(tmp_path):
    _report(tmp_path / "ctl", passed=True, name="gpu\x1b[2J\x00")
    rows = summary.render(summary.read_reports(tmp_path)).splitlines()[2:]
    assert rows == ["| ctl | gpu\\x1b[2J\\x00 v1.37.1 | e2e | 6 | 0 | 55 | PASSED |"]


def test_passes_with_checks_not_judged_are_counted_in_the_pass_column(tmp_path):
    _report(tmp_path / "vendor-a", passed=True, partly_judged=3)
    _report(tmp_path / "vendor-b", passed=True, partly_judged=0)
    _report(tmp_path / "vendor-c", passed=True)
    rows = summary.render(summary.read_reports(tmp_path)).splitlines()[2:]
    # A PASS with checks not judged is not a plain one (verdicts.py ClauseResult.partly_judged): the table says how
    # many; a report with none, or written before result.json counted them, reads as it always did.
    assert rows == [
        "| vendor-a | upstream sample-device-plugin v1.37.1 | e2e | 6 (3 with checks not judged) | 0 | 55 | PASSED |",
        "| vendor-b | upstream sample-device-plugin v1.37.1 | e2e | 6 | 0 | 55 | PASSED |",
        "| vendor-c | upstream sample-device-plugin v1.37.1 | e2e | 6 | 0 | 55 | PASSED |",
    ]


def test_a_partly_judged_count_that_is_not_a_number_is_bad_input(tmp_path):
    _report(tmp_path / "odd", passed=True, partly_judged="three")
    with pytest.raises(BadInput, match="is not a certification result"):
        summary.read_reports(tmp_path)


def test_a_report_written_with_a_partly_judged_pass_is_summarised_so(tmp_path):
    def passed(name: str, not_judged: list[str]) -> ClauseResult:
        clause = Clause(f"suites/dra/m.py::{name}", name, f"rule of {name}", "suites/dra/m.py")
        return ClauseResult(clause, PASS, "as required", [], 1.0, not_judged=not_judged)

    note = "CDI checks: NOT APPLICABLE: the driver prepared claim c with no CDI devices"
    cert = Certification(
        Subject("dra-driver", "nri-driver", "1.0"),
        ["DRA kubelet plugin API v1"],
        [passed("test_partly", [note]), passed("test_whole", [])],
        started=1_700_000_000.0,
    )
    write_report(cert, tmp_path / "vendor")
    rows = summary.render(summary.read_reports(tmp_path)).splitlines()[2:]
    assert rows == ["| vendor | nri-driver 1.0 | sanity | 2 (1 with checks not judged) | 0 | 0 | PASSED |"]
