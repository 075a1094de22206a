"""`device-conformance bugs`: the catalogued upstream bugs, and which of them a given release has.

A user reproducing a kubelet bug on a chosen version reads this before the run: which checks will be
expected failures on that release (and why), and which release fixed each bug on each branch. The data
is expectations/bugtable.KNOWN_BUGS; nothing here decides a verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from device_conformance.expectations.behaviour import KnownBug
from device_conformance.expectations.bugtable import KNOWN_BUGS
from device_conformance.expectations.versions import KubeVersion


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bugs",
        help="the known upstream kubelet bugs, and which of them a release has",
        description="Every catalogued upstream bug: issue, title, first affected release, the fix on each "
        "release branch and the check that shows it. With --k8s-version, whether that release is affected.",
    )
    p.add_argument("--k8s-version", metavar="X.Y.Z", help="say for each bug whether this release has it")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of text")
    p.set_defaults(func=_run)


def bug_entry(bug: KnownBug, version: KubeVersion | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "issue": bug.issue,
        "title": bug.title,
        "first_affected": str(bug.first_affected),
        "fixes": [{"release": str(fix.release), "pr": fix.pr} for fix in bug.fixes],
        "shown_by": bug.shown_by,
    }
    if version is not None:
        entry["version"] = str(version)
        entry["affected"] = bug.affects(version)
        entry["fix_for_version"] = bug.describe_fix(version)
    return entry


def render_text(entries: list[dict[str, Any]], version: KubeVersion | None) -> str:
    lines = []
    for entry in entries:
        verdict = ""
        if version is not None:
            verdict = "  AFFECTED" if entry["affected"] else "  not affected"
        lines.append(f"{entry['issue']}{verdict}: {entry['title']}")
        lines.append(f"    first affected {entry['first_affected']}")
        fixes = entry["fixes"] or [{"release": "-", "pr": "no fix released"}]
        for fix in fixes:
            lines.append(f"    fixed in {fix['release']}: {fix['pr']}")
        if version is not None:
            lines.append(f"    on {version}: {entry['fix_for_version']}")
        lines.append(f"    shown by {entry['shown_by']}")
    if version is not None:
        count = sum(1 for entry in entries if entry["affected"])
        lines.append(f"{count} of {len(entries)} known bugs affect Kubernetes {version}")
    else:
        lines.append(f"{len(entries)} known bugs")
    return "\n".join(lines) + "\n"


def _run(args: argparse.Namespace) -> int:
    version = KubeVersion.parse(args.k8s_version) if args.k8s_version else None
    entries = [bug_entry(bug, version) for bug in KNOWN_BUGS]
    sys.stdout.write(json.dumps(entries, indent=2) + "\n" if args.json else render_text(entries, version))
    return 0
