"""README's suites table: the test counts it gives are what pytest collects, so it cannot go stale."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# | device plugin manager | `deviceplugin` | 66 (6) | [suites/device_plugin](suites/device_plugin/README.md) |
ROW = re.compile(r"^\|[^|]+\|[^|]+\| (\d+)(?: \((\d+)\))? \| (?:\[suites/(\w+)\]|\u2013)")


def collected_per_suite(marks: str = "") -> dict[str, int]:
    """Test ids pytest collects under suites/, counted per suite directory (one collection for all)."""
    argv = [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider"]
    argv += ["-m", marks] if marks else []
    out = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True).stdout
    return Counter(line.split("/")[1] for line in out.splitlines() if line.startswith("suites/") and "::" in line)


def table_rows() -> dict[str, tuple[int, int]]:
    """suite directory -> (tests, slow tests) as the README gives them; the smoke row links no README."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Suites") :].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            tests, slow, directory = match.groups()
            rows[directory or "smoke"] = (int(tests), int(slow or 0))
    return rows


def test_every_suite_directory_has_a_row():
    directories = {p.name for p in (ROOT / "suites").iterdir() if p.is_dir() and list(p.glob("test_*.py"))}
    assert set(table_rows()) == directories


def test_the_counts_are_what_pytest_collects():
    every, slow = collected_per_suite(), collected_per_suite("slow")
    assert table_rows() == {directory: (every[directory], slow[directory]) for directory in every}
