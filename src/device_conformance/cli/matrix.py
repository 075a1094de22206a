"""`device-conformance matrix`: the suites across Kubernetes versions, one table of outcomes.

Each version runs in its own pytest process (its own cluster, its own binaries from the cache; `setup`
builds what is missing first, reusing cached versions), writing JUnit XML that is counted per suite. The
verdicts inside each run already depend on the version under test (expectations/): a cell is green when
it has no failure, with xfails only for catalogued bugs on their affected releases.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

from device_conformance.cli import release_run
from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import MATRIX_VERSIONS, KubeVersion

OUTCOMES = ("passed", "failed", "xfailed", "skipped")
DEFAULT_MARKERS = "not slow"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "matrix",
        help="run the suites on several Kubernetes versions and print one table",
        description="Runs pytest on the local provider once per version (building missing binaries first) "
        "and prints version x suite -> passed/failed/xfailed/skipped. Exit 1 if any cell has a failure.",
    )
    p.add_argument(
        "--versions",
        default=",".join(str(v) for v in MATRIX_VERSIONS),
        help="comma- or space-separated X.Y.Z releases (default: %(default)s)",
    )
    p.add_argument("-m", "--markers", default=DEFAULT_MARKERS, help="pytest -m expression (default: %(default)r)")
    p.add_argument("--pytest-args", default="", help="more pytest arguments, one shell-quoted string")
    p.add_argument("--out", type=Path, default=Path("matrix-results"), help="results folder (default: %(default)s)")
    p.add_argument("--no-setup", action="store_true", help="do not build missing binaries first")
    p.set_defaults(func=_run)


def parse_versions(text: str) -> list[KubeVersion]:
    versions = [KubeVersion.parse(part) for part in text.replace(",", " ").split()]
    if not versions:
        raise BadInput("--versions names no release", "give releases like 1.36.4,1.37.1")
    return versions


def suite_of(classname: str, file: str | None) -> str:
    """The suite a JUnit test case belongs to: the folder under suites/ (suites.dra.test_x -> dra)."""
    parts = (file or classname.replace(".", "/")).split("/")
    return parts[1] if len(parts) > 1 and parts[0] == "suites" else parts[0]


def outcome_of(case: ET.Element) -> str:
    for child in case:
        if child.tag in ("failure", "error"):
            return "failed"
        if child.tag == "skipped":
            return "xfailed" if child.get("type") == "pytest.xfail" else "skipped"
    return "passed"


def count_outcomes(junit: Path) -> dict[str, Counter[str]]:
    """Per suite, how many test cases passed, failed (or errored), xfailed and were skipped."""
    counts: dict[str, Counter[str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        suite = suite_of(case.get("classname", ""), case.get("file"))
        counts.setdefault(suite, Counter())[outcome_of(case)] += 1
    return counts


def cell(counts: Counter[str] | None) -> str:
    if not counts:
        return "-"
    return "/".join(str(counts[outcome]) for outcome in OUTCOMES)


def render(results: dict[str, dict[str, Counter[str]]], notes: dict[str, str]) -> str:
    suites = sorted({suite for per_suite in results.values() for suite in per_suite})
    lines = [
        "Cells: passed/failed/xfailed/skipped.",
        "",
        "| Kubernetes | " + " | ".join(suites) + " | verdict |",
        "| --- | " + " | ".join("---" for _ in suites) + " | --- |",
    ]
    for version, per_suite in results.items():
        failed = sum(counts["failed"] for counts in per_suite.values())
        verdict = notes.get(version) or ("green" if failed == 0 else f"{failed} failed")
        lines.append(f"| {version} | " + " | ".join(cell(per_suite.get(s)) for s in suites) + f" | {verdict} |")
    return "\n".join(lines) + "\n"


def _run(args: argparse.Namespace) -> int:
    versions = parse_versions(args.versions)
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[str, Counter[str]]] = {}
    notes: dict[str, str] = {}
    for version in versions:
        folder = args.out / str(version)
        folder.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        if not args.no_setup and release_run.setup(version, folder) != 0:
            results[str(version)], notes[str(version)] = {}, f"setup failed: see {folder / 'setup.log'}"
            print(f"[matrix] {version}: {notes[str(version)]}", flush=True)
            continue
        code, junit = release_run.pytest(version, folder, "suites", "-m", args.markers, *shlex.split(args.pytest_args))
        results[str(version)] = count_outcomes(junit) if junit.exists() else {}
        if not junit.exists():
            notes[str(version)] = f"pytest exit {code}, no JUnit: see {folder / 'pytest.log'}"
        print(f"[matrix] {version}: pytest exit {code} in {time.monotonic() - started:.0f}s", flush=True)
    table = render(results, notes)
    (args.out / "matrix.md").write_text(table, encoding="utf-8")
    serialised = {v: {s: dict(c) for s, c in per.items()} for v, per in results.items()}
    (args.out / "matrix.json").write_text(json.dumps({"results": serialised, "notes": notes}, indent=2))
    sys.stdout.write(table)
    red = notes or any(c["failed"] for per in results.values() for c in per.values())
    return 1 if red else 0
