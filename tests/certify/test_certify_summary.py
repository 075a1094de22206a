"""`certify summary`: one table over report folders, red when any report failed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from device_conformance.certify import summary
from device_conformance.cli.main import main
from device_conformance.core.errors import BadInput


def _report(folder: Path, *, passed: bool, fail: int = 0, name: str = "upstream sample-device-plugin") -> Path:
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(
        json.dumps(
            {
                "subject": {"name": name, "version": "v1.37.1"},
                "mode": "e2e (the suites against the subject on a real cluster)",
                "counts": {"PASS": 6, "FAIL": fail, "NOT APPLICABLE": 55},
                "passed": passed,
            }
        )
    )
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
