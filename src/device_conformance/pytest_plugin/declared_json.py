"""`--declared-json PATH`: what every collected test declares (scenarios, minimum versions, known bugs) as
JSON, for `device-conformance scenarios`, which collects the suites in a subprocess and reads the file.

    {"tests": [{"nodeid": "...", "scenarios": ["DP6"], "since": [{"version": "1.35", "reason": "..."}],
                "known_bugs": ["kubernetes#126341"]}, ...]}

Written once collection is done (after -m/-k deselection), by the process that collected: run it without
xdist's -n (its controller collects nothing).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from device_conformance.pytest_plugin.declarative_markers import DECLARED, Declared


def entry(item: pytest.Item) -> dict[str, object]:
    found = item.stash.get(DECLARED, Declared())
    return {
        "nodeid": item.nodeid,
        "scenarios": list(found.scenarios),
        "since": [{"version": str(minimum), "reason": minimum.reason} for minimum in found.since],
        "known_bugs": [bug.issue for bug in found.bugs],
    }


def pytest_collection_finish(session: pytest.Session) -> None:
    path = session.config.getoption("declared_json", None)
    if path is None or hasattr(session.config, "workerinput"):
        return
    tests = [entry(item) for item in session.items]
    Path(path).write_text(json.dumps({"tests": tests}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
