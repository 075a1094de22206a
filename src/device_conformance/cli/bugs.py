"""`device-conformance bugs`: the catalogued upstream bugs, and which of them a given release has.

A user reproducing a kubelet bug on a chosen version reads this before the run: which checks will be
expected failures on that release (and why), and which release fixed each bug on each branch. The data
is expectations/bugtable.KNOWN_BUGS; nothing here decides a verdict.

`device-conformance bugs verify` checks that data against upstream's release notes (CHANGELOG/CHANGELOG-1.YY.md
of the newest k8s.io/kubernetes module zip the Go module proxy serves, or --changelog-dir): exit 1 on a mismatch.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from device_conformance.core.errors import BadInput
from device_conformance.expectations.behaviour import KnownBug
from device_conformance.expectations.bugtable import KNOWN_BUGS
from device_conformance.expectations.release_notes import ReleaseNotes, notes_from_dir, notes_from_zip, verify
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain.gobuild import go_binary, go_mod_download, listed_versions

# How many of the newest k8s.io/kubernetes versions to try for the notes (the proxy refuses some: 403).
NOTES_VERSIONS_TRIED = 5


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bugs",
        help="the known upstream kubelet bugs, and which of them a release has",
        description="Every catalogued upstream bug: issue, title, first affected release, the fix on each "
        "release branch and the check that shows it. With --k8s-version, whether that release is affected.",
    )
    p.add_argument(
        "action",
        nargs="?",
        choices=("verify",),
        help="verify: check every bug's fix releases against upstream's release notes (exit 1 on a mismatch)",
    )
    p.add_argument("--k8s-version", metavar="X.Y.Z", help="say for each bug whether this release has it")
    p.add_argument("--json", action="store_true", help="print a JSON list instead of text")
    p.add_argument(
        "--changelog-dir",
        type=Path,
        metavar="DIR",
        help="verify: read CHANGELOG-1.YY.md files from DIR instead of the newest k8s.io/kubernetes module zip",
    )
    p.set_defaults(func=_run)


def bug_entry(bug: KnownBug, version: KubeVersion | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "issue": bug.issue,
        "title": bug.title,
        "first_affected": str(bug.first_affected),
        "fixes": [
            {"release": str(fix.release), "pr": fix.pr, **({"source": fix.source} if fix.source else {})}
            for fix in bug.fixes
        ],
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


def newest_notes(go: str | None = None, listed: Sequence[str] | None = None) -> ReleaseNotes:
    """The release notes in the newest k8s.io/kubernetes module zip the Go module proxy serves (`go list -m
    -versions`, or `listed` when the caller has it, then `go mod download`; a zip whose go.mod needs a newer Go
    is still downloaded and read)."""
    go = go or go_binary("release notes", alternative="pass --changelog-dir DIR")
    problem = None
    if listed is None:
        listed, problem = listed_versions(go)
    versions = sorted((KubeVersion.parse(v) for v in listed if _is_tag(v)), reverse=True)
    tried = []
    for version in versions[:NOTES_VERSIONS_TRIED]:
        downloaded, refused = go_mod_download([f"k8s.io/kubernetes@{version.tag}"], go)
        zip_path = Path(downloaded[0]["Zip"]) if downloaded and downloaded[0].get("Zip") else None
        if zip_path is not None and zip_path.is_file():
            return notes_from_zip(zip_path)
        tried.append(f"{version.tag}: {refused}")
    raise BadInput(
        "no k8s.io/kubernetes module zip to read release notes from: "
        + ("; ".join(tried) or problem or "the Go module proxy lists no version"),
        "pass --changelog-dir DIR (a CHANGELOG/ folder of a kubernetes/kubernetes checkout)",
    )


def _is_tag(text: str) -> bool:
    try:
        KubeVersion.parse(text)
    except BadInput:
        return False
    return True


def run_verify(notes: ReleaseNotes) -> int:
    """Print every check of every bug against `notes`, mismatches last; 1 when there is one."""
    findings = verify(KNOWN_BUGS, notes)
    mismatches = [f for f in findings if not f.ok]
    newest = ", ".join(f"1.{minor} to {notes.newest(minor)}" for minor in sorted(notes.releases)[-5:])
    lines = [f"release notes: {notes.source} ({newest})"]
    lines += [finding.render() for finding in findings if finding.ok]
    lines += [finding.render() for finding in mismatches]
    checks, known = _count(len(findings), "check"), _count(len(KNOWN_BUGS), "known bug")
    lines.append(
        f"{_count(len(mismatches), 'mismatch')} in {checks} of {known}"
        if mismatches
        else f"all {checks} of {known} agree with the release notes"
    )
    sys.stdout.write("\n".join(lines) + "\n")
    return 1 if mismatches else 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "es" if noun.endswith("ch") else "s")


def _run(args: argparse.Namespace) -> int:
    if args.action == "verify":
        if args.changelog_dir is not None:
            if not args.changelog_dir.is_dir() or not any(args.changelog_dir.glob("CHANGELOG-1.*.md")):
                raise BadInput(
                    f"--changelog-dir {args.changelog_dir} holds no CHANGELOG-1.YY.md file",
                    "point it at the CHANGELOG/ folder of a kubernetes/kubernetes checkout",
                )
            return run_verify(notes_from_dir(args.changelog_dir))
        return run_verify(newest_notes())
    version = KubeVersion.parse(args.k8s_version) if args.k8s_version else None
    entries = [bug_entry(bug, version) for bug in KNOWN_BUGS]
    sys.stdout.write(json.dumps(entries, indent=2) + "\n" if args.json else render_text(entries, version))
    return 0
