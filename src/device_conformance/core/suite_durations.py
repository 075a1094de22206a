"""How long each suite test took on a whole run, kept in suites/durations.json, so that `--dist loadgroup` can hand
out the longest modules first (pytest_plugin/xdist_groups.py).

Handing out modules in order of their measured length is the longest-processing-time-first rule: on 8 workers it
turns the whole suite's last module, started late behind shorter ones, into one started at once. The times are
each test's JUnit time (setup, call and teardown, so a module's shared wait is counted with the test that pays it),
the median over the runs given, written by `bench/durations.py` from the soak's JUnit files.
"""

from __future__ import annotations

import json
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path

DURATIONS_FILE = Path("suites") / "durations.json"


def node_id(classname: str, name: str) -> str:
    """The pytest node id of a JUnit test case of a module-level test function: `suites.dra.test_x` and
    `test_y[a]@suites/dra/test_x.py` -> `suites/dra/test_x.py::test_y[a]` (the suites have no test classes;
    xdist appends `@<group>` to the name of a grouped test)."""
    return f"{classname.replace('.', '/')}.py::{name.rsplit('@', 1)[0]}"


def from_junit(path: Path) -> dict[str, float]:
    """Node id -> seconds of every test case in the file, skipped ones included with the moment they took (a
    test missing from the durations makes its module count as not measured)."""
    times: dict[str, float] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        times[node_id(case.get("classname", ""), case.get("name", ""))] = float(case.get("time", 0))
    return times


def median_of_runs(runs: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per test, the median of the runs that ran it, to the tenth of a second, sorted by node id."""
    seen: dict[str, list[float]] = {}
    for run in runs:
        for test, seconds in run.items():
            seen.setdefault(test, []).append(seconds)
    return {test: round(statistics.median(seen[test]), 1) for test in sorted(seen)}


def load(root: Path) -> dict[str, float]:
    """The measured durations under `root` (the rootdir of the run); none when the file is absent."""
    path = root / DURATIONS_FILE
    if not path.is_file():
        return {}
    return {str(test): float(seconds) for test, seconds in json.loads(path.read_text()).items()}
