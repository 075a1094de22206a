"""`device-conformance versions`: the Kubernetes releases upstream has, which of them the Go module proxy lets
this machine build, and what the matrix and the known-bug data know of.

Per minor of the matrix (expectations/versions.MATRIX_VERSIONS) and the next one (its pre-releases):
- the newest release the proxy lists (`go list -m -versions k8s.io/kubernetes`; the list may lack releases the
  proxy still serves) and the newest upstream's release notes name (CHANGELOG-1.YY.md of the newest module zip,
  as `bugs verify` reads them);
- from the newest of those down to the matrix's release, what `go mod download -json` answers: the module zip
  downloaded and its checksum verified against the checksum database, and then whether every module a build of
  the server binaries fetches is served (gobuild.build_requirements: the staging modules at v0.N.P and every
  other module k8s.io/kubernetes's go.mod requires), until one is buildable (for the next minor: until one
  downloads);
- the matrix's release, the newest release any known bug's fix names, and the newest release of the notes the
  bug data was last checked against (release_notes.CHECKED_AGAINST);
- a line per minor where upstream is ahead of the matrix or of the checked notes.
With --offline only the data is read.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from device_conformance.cli.bugs import newest_notes
from device_conformance.core.errors import BadInput
from device_conformance.expectations.behaviour import Fix, KnownBug
from device_conformance.expectations.bugtable import KNOWN_BUGS
from device_conformance.expectations.release_notes import CHECKED_AGAINST, CheckedNotes
from device_conformance.expectations.versions import MATRIX_VERSIONS, KubeVersion
from device_conformance.toolchain.gobuild import (
    build_requirements,
    download_for_version,
    go_binary,
    listed_versions,
)

KUBERNETES = "k8s.io/kubernetes"
_STATUS_RE = re.compile(r"\b(\d{3} [A-Z][A-Za-z ]*?)\s*$")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "versions",
        help="the Kubernetes releases upstream has, which build here, and what the matrix and bug data know of",
        description="Per minor of the matrix and the next one: the newest release the Go module proxy lists, the "
        "newest that downloads and verifies, whether its build's modules are served, the matrix's release and "
        "the newest release the known-bug data names or was checked against.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of text")
    p.add_argument("--offline", action="store_true", help="ask no proxy: only what the matrix and bug data know")
    p.set_defaults(func=_run)


@dataclass(frozen=True)
class Probe:
    """What the proxy answered for one release: `problem` when k8s.io/kubernetes@v could not be downloaded and
    verified; else `refused`, the build modules it would not serve (module@version -> why), of `modules`."""

    version: KubeVersion
    problem: str | None = None
    refused: dict[str, str] = field(default_factory=dict)
    modules: int = 0

    @property
    def verified(self) -> bool:
        return self.problem is None

    @property
    def buildable(self) -> bool:
        return self.problem is None and not self.refused

    def render(self) -> str:
        if self.problem is not None:
            return f"{self.version}: {self.problem}"
        if not self.refused:
            return f"{self.version}: downloads and verifies; build modules: all {self.modules} served"
        refused = ", ".join(f"{spec} ({why})" for spec, why in sorted(self.refused.items()))
        return (
            f"{self.version}: downloads and verifies; build modules: {len(self.refused)} of {self.modules} "
            f"refused: {refused}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "version": str(self.version),
            "verified": self.verified,
            "problem": self.problem,
            "modules": self.modules,
            "refused_modules": dict(sorted(self.refused.items())),
        }


@dataclass
class MinorReport:
    minor: int
    matrix: KubeVersion | None
    newest_fix: Fix | None
    notes_checked: KubeVersion | None
    listed: KubeVersion | None = None
    noted: KubeVersion | None = None
    probes: list[Probe] = field(default_factory=list)

    @property
    def verified(self) -> Probe | None:
        return next((probe for probe in self.probes if probe.verified), None)

    @property
    def buildable(self) -> KubeVersion | None:
        return next((probe.version for probe in self.probes if probe.buildable), None)

    def upstream(self, offline: bool) -> KubeVersion | None:
        known = [self.notes_checked] if offline else [self.listed, self.noted, *(p.version for p in self.probes)]
        return max((v for v in known if v is not None), default=None)

    def ahead(self, offline: bool) -> list[str]:
        """The lines saying upstream has a release newer than the matrix's, or than the checked notes."""
        upstream = self.upstream(offline)
        if upstream is None:
            return []
        lines = []
        if self.matrix is None or upstream > self.matrix:
            runs = f"the matrix runs {self.matrix}" if self.matrix else f"the matrix runs no 1.{self.minor} release"
            lines.append(f"1.{self.minor}: upstream has {upstream}, {runs}{self._here(offline)}")
        if not offline and (self.notes_checked is None or upstream > self.notes_checked):
            checked = f"to {self.notes_checked}" if self.notes_checked else f"with no 1.{self.minor} notes"
            lines.append(
                f"1.{self.minor}: upstream has {upstream}, the bug data was checked against release notes {checked}"
            )
        return lines

    def _here(self, offline: bool) -> str:
        if offline:
            return ""
        buildable, verified = self.buildable, self.verified
        if buildable is not None and buildable != self.matrix:
            return f" ({buildable} builds here)"
        if verified is not None and not verified.buildable and verified.version != self.matrix:
            return f" ({verified.version} is not buildable here: {', '.join(sorted(verified.refused))})"
        if verified is None:
            return " (no newer release downloads here)"
        return ""

    def as_json(self, offline: bool) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "minor": f"1.{self.minor}",
            "matrix": _text(self.matrix),
            "newest_fix": {"release": str(self.newest_fix.release), "pr": self.newest_fix.pr}
            if self.newest_fix
            else None,
            "notes_checked": _text(self.notes_checked),
            "upstream": _text(self.upstream(offline)),
            "ahead": self.ahead(offline),
        }
        if not offline:
            verified = self.verified
            entry.update(
                listed=_text(self.listed),
                noted=_text(self.noted),
                newest_verified=_text(verified.version if verified else None),
                newest_buildable=_text(self.buildable),
                probes=[probe.as_json() for probe in self.probes],
            )
        return entry


def _text(version: KubeVersion | None) -> str | None:
    return str(version) if version is not None else None


def newest_fixes(bugs: Sequence[KnownBug]) -> dict[int, Fix]:
    """Per minor, the newest release any bug's fix names on that branch."""
    newest: dict[int, Fix] = {}
    for bug in bugs:
        for fix in bug.fixes:
            if fix.release.minor not in newest or fix.release > newest[fix.release.minor].release:
                newest[fix.release.minor] = fix
    return newest


def report_minors(matrix: Sequence[KubeVersion], bugs: Sequence[KnownBug], checked: CheckedNotes) -> list[MinorReport]:
    """One report per matrix minor and the next, with what the data knows."""
    fixes = newest_fixes(bugs)
    by_minor = {version.minor: version for version in matrix}
    minors = [*sorted(by_minor), max(by_minor) + 1]
    return [MinorReport(m, by_minor.get(m), fixes.get(m), checked.newest_of(m)) for m in minors]


def short_reason(text: str) -> str:
    """What `go mod download` said about one module, in a few words: the HTTP status of the proxy or the
    checksum database, or its first line."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    first = lines[0] if lines else "no answer"
    status = _STATUS_RE.search(first)
    if status:
        who = "the checksum database" if "sum.golang.org" in first or "verifying" in first else "the proxy"
        return f"{who} answers {status.group(1)}"
    return first if len(first) <= 160 else first[:157] + "..."


def probe(version: KubeVersion, go: str) -> Probe:
    """Download and verify k8s.io/kubernetes@version, then ask for every module its build fetches."""
    records, problem = download_for_version([f"{KUBERNETES}@{version.tag}"], version, go)
    if problem is not None or not records or not records[0].get("GoMod"):
        return Probe(version, problem=short_reason(problem or "no go.mod downloaded"))
    specs = build_requirements(version, Path(records[0]["GoMod"]).read_text())
    answered, problem = download_for_version(specs, version, go)
    refused = {f"{r.get('Path')}@{r.get('Version')}": short_reason(r["Error"]) for r in answered if "Error" in r}
    if problem is not None and not refused:
        refused = {"(go mod download)": short_reason(problem)}
    return Probe(version, refused=refused, modules=len(specs))


def candidates(report: MinorReport, known: Sequence[KubeVersion]) -> list[KubeVersion]:
    """The releases of the minor to try, newest first: for a matrix minor its releases from the matrix's on, for
    the next minor its pre-releases and releases."""
    pool = {v for v in known if v.major == 1 and v.minor == report.minor}
    if report.matrix is not None:
        pool = {v for v in pool if not v.is_prerelease and v >= report.matrix} | {report.matrix}
    return sorted(pool, reverse=True)


def probe_minors(
    reports: list[MinorReport],
    listed: Sequence[KubeVersion],
    noted: dict[int, list[KubeVersion]],
    try_release: Callable[[KubeVersion], Probe],
) -> None:
    """Fill each report from the proxy: newest first until a release is buildable (the next minor: until one
    downloads and verifies)."""
    for report in reports:
        mine = [v for v in listed if v.major == 1 and v.minor == report.minor]
        report.listed = max(mine, default=None)
        report.noted = max(noted.get(report.minor, []), default=None)
        for version in candidates(report, [*mine, *noted.get(report.minor, [])]):
            result = try_release(version)
            report.probes.append(result)
            if result.buildable or (report.matrix is None and result.verified):
                break


def render(reports: list[MinorReport], offline: bool, heading: str) -> str:
    lines = [heading]
    for report in reports:
        lines.append(f"1.{report.minor}")
        if not offline:
            lines.append(f"  proxy lists: {report.listed or 'none'}; release notes name: {report.noted or 'none'}")
            lines += [f"  {probe.render()}" for probe in report.probes]
            verified = report.verified
            lines.append(
                f"  newest that downloads and verifies: {verified.version if verified else 'none'}; "
                f"newest whose build modules are all served: {report.buildable or 'none'}"
            )
        fix = f"{report.newest_fix.release} ({report.newest_fix.pr})" if report.newest_fix else "none"
        lines.append(
            f"  matrix: {report.matrix or 'none'}; newest release a bug fix names: {fix}; "
            f"bug data checked against release notes to: {report.notes_checked or 'none'}"
        )
    ahead = [line for report in reports for line in report.ahead(offline)]
    lines += ["", *ahead] if ahead else ["", "the matrix and the bug data are up to date with upstream"]
    return "\n".join(lines) + "\n"


def _run(args: argparse.Namespace) -> int:
    reports = report_minors(MATRIX_VERSIONS, KNOWN_BUGS, CHECKED_AGAINST)
    checked = f"{CHECKED_AGAINST.source}, {CHECKED_AGAINST.date}"
    if args.offline:
        heading = f"Kubernetes releases the data knows of (offline; release notes: {checked})"
        source = None
    else:
        go = go_binary("proxy answers", alternative="run `device-conformance versions --offline`")
        names, problem = listed_versions(go, KUBERNETES)
        # no listing: newest_notes lists again and says why it has no notes
        notes = newest_notes(go, names if problem is None else None)
        listed = [KubeVersion.parse(name) for name in names if _is_version(name)]
        noted = {minor: list(tags) for minor, tags in notes.releases.items()}
        probe_minors(reports, listed, noted, lambda version: probe(version, go))
        source = notes.source
        heading = (
            f"Kubernetes releases on the Go module proxy ({datetime.date.today().isoformat()}; release notes: "
            f"{Path(source).name}; bug data checked against: {checked})"
        )
    if args.json:
        document = {
            "offline": args.offline,
            "release_notes": source,
            "checked_against": {"source": CHECKED_AGAINST.source, "date": CHECKED_AGAINST.date},
            "minors": [report.as_json(args.offline) for report in reports],
        }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    else:
        sys.stdout.write(render(reports, args.offline, heading))
    return 0


def _is_version(text: str) -> bool:
    try:
        KubeVersion.parse(text)
    except BadInput:
        return False
    return True
