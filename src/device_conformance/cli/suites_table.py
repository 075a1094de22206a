"""README.md's Suites table with the test counts pytest collects now (a derived doc: `make docs` writes it).

Only the counts are derived: the rows (description, marker, link) are written by hand between the markers,
one per suite folder, the smoke row linking no README. The table is a section of README.md, so its text is
the whole README with that section's counts replaced.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from device_conformance.core.errors import ConformanceError

START = "<!-- suites-table: rows by hand, counts by `make docs` -->"
END = "<!-- /suites-table -->"
# | device plugin manager | `deviceplugin` | 66 (6) | [suites/device_plugin](suites/device_plugin/README.md) |
ROW = re.compile(r"^(\|[^|]+\|[^|]+\| )(\d+)(?: \((\d+)\))?( \| (?:\[suites/(\w+)\]|\u2013).*)$")
TOTAL = re.compile(r"(tests collected \(slow\), )(\d+)( in all)")

# One collection for both counts (a second with `-m slow` would double the time): each test's node id and
# whether it is slow, as `-m slow` decides it (any slow marker, the module's pytestmark included).
_COUNT = """
import json, sys, pytest
class Count:
    def pytest_collection_finish(self, session):
        rows = [[item.nodeid, any(True for _ in item.iter_markers("slow"))] for item in session.items]
        with open(sys.argv[2], "w") as out:
            json.dump(rows, out)
# Every test, also those a run leaves out unless asked for (pytest_plugin/opt_in.py).
NO_OPT_IN = ["-p", "no:device_conformance.pytest_plugin.opt_in"]
sys.exit(pytest.main([sys.argv[1], "--collect-only", "-q", "-p", "no:cacheprovider", *NO_OPT_IN], plugins=[Count()]))
"""


def collected(root: Path) -> dict[str, tuple[int, int]]:
    """suite folder -> (tests, slow tests) that pytest collects under root/suites."""
    with tempfile.TemporaryDirectory(prefix="dc-suites-table-") as scratch:
        report = Path(scratch) / "tests.json"
        # PYTEST_ADDOPTS could deselect tests (-m, -k): the table counts every test.
        env = {name: value for name, value in os.environ.items() if name != "PYTEST_ADDOPTS"}
        done = subprocess.run(
            [sys.executable, "-c", _COUNT, "suites", str(report)], cwd=root, env=env, capture_output=True, text=True
        )
        if done.returncode != 0 or not report.exists():
            tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:])
            raise ConformanceError(f"collecting suites/ failed (pytest exit {done.returncode}):\n{tail}")
        tests = json.loads(report.read_text(encoding="utf-8"))
    every = Counter(nodeid.split("/")[1] for nodeid, _ in tests)
    slow = Counter(nodeid.split("/")[1] for nodeid, is_slow in tests if is_slow)
    return {folder: (every[folder], slow[folder]) for folder in every}


def with_counts(readme: str, counts: dict[str, tuple[int, int]]) -> str:
    """readme with each row's count and the header's total set from counts; refuses a suite without a row."""
    if START not in readme or END not in readme:
        raise ConformanceError(f"README.md has lost the Suites table's markers {START} ... {END}")
    before, rest = readme.split(START, 1)
    table, after = rest.split(END, 1)
    lines, seen = [], set()
    for line in table.split("\n"):
        match = ROW.match(line)
        if match:
            head, _, _, tail, folder = match.groups()
            folder = folder or "smoke"
            seen.add(folder)
            tests, slow = counts.get(folder, (0, 0))
            line = f"{head}{tests}{f' ({slow})' if slow else ''}{tail}"
        lines.append(TOTAL.sub(lambda m: f"{m[1]}{sum(t for t, _ in counts.values())}{m[3]}", line))
    missing = sorted(set(counts) - seen)
    if missing:
        raise ConformanceError(f"README.md's Suites table has no row for suites/{', suites/'.join(missing)}: add one")
    return before + START + "\n".join(lines) + END + after


def readme(root: Path) -> str:
    """README.md as it should be: the committed text with the counts pytest collects now."""
    return with_counts((root / "README.md").read_text(encoding="utf-8"), collected(root))
