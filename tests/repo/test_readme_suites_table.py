"""README's suites table has one row per suite folder, no more; its counts are derived (test_derived_docs.py)."""

from __future__ import annotations

from pathlib import Path

from device_conformance.cli.suites_table import END, ROW, START

ROOT = Path(__file__).resolve().parents[2]


def test_every_suite_directory_has_a_row():
    table = (ROOT / "README.md").read_text(encoding="utf-8").split(START, 1)[1].split(END, 1)[0]
    rows = {match[5] or "smoke" for match in map(ROW.match, table.splitlines()) if match}  # smoke links no README
    directories = {p.name for p in (ROOT / "suites").iterdir() if p.is_dir() and list(p.glob("test_*.py"))}
    assert rows == directories
