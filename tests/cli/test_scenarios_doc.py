"""docs/scenarios.md is what `device-conformance scenarios --markdown` makes of the suites as they are."""

from __future__ import annotations

import difflib
from pathlib import Path

from device_conformance.cli.scenarios import collect, render
from device_conformance.cli.scenarios.table import build

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "scenarios.md"


def test_docs_scenarios_md_matches_the_suites_markers():
    expected = render.markdown(build(collect.collect(ROOT / "suites")))
    committed = DOC.read_text(encoding="utf-8") if DOC.exists() else ""
    if committed != expected:
        diff = difflib.unified_diff(
            committed.splitlines(), expected.splitlines(), "docs/scenarios.md (committed)", "from suites/", lineterm=""
        )
        shown = "\n".join(list(diff)[:40])
        raise AssertionError(
            "docs/scenarios.md does not match the suites' scenario markers; regenerate it with\n"
            f"  .venv/bin/{render.REGENERATE}\n{shown}"
        )
