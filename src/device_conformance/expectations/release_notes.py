"""Upstream's release notes, and the known-bug data checked against them (`device-conformance bugs verify`).

The k8s.io/kubernetes module zip holds CHANGELOG/CHANGELOG-1.YY.md for every minor, with the notes of every
release cut before that tag (not its own: v1.37.2's zip ends at v1.37.1). A release's notes start at a
heading `# v1.37.2` (`# v1.38.0-alpha.1` for a pre-release) and name each change's pull request as
`([#142492](https://github.com/kubernetes/kubernetes/pull/142492), [@author](...))`. The notes of an X.Y.0
release repeat every change of its pre-releases, so the first tag that carries a change is the oldest
heading that names it.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from device_conformance.expectations.behaviour import Fix, KnownBug
from device_conformance.expectations.versions import KubeVersion

CHANGELOG_NAME_RE = re.compile(r"(?:^|/)CHANGELOG-(\d+)\.(\d+)\.md$")
_HEADING_RE = re.compile(r"^# (v\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)\s*$")
# A number the notes name: a PR or issue link, `#N` in text, or `kubernetes#N`. Not digits inside hashes.
_MENTION_RE = re.compile(r"(?<![\w#/&])#(\d+)\b|github\.com/kubernetes/kubernetes/(?:pull|issues)/(\d+)\b")
_NUMBER_RE = re.compile(r"#(\d+)")
# A note's own text: without its `([#N](...), [@author](...))` credit and `[SIG ...]` tail, which is what a
# cherry-pick's note shares with the mainline PR's.
_CREDIT_RE = re.compile(r"\s*\(\[#(\d+)\]\([^)]*\)(?:,\s*\[@[^\]]*\]\([^)]*\))*\)")
_SIG_RE = re.compile(r"\s*\[SIG [^\]]*\]\s*$")
NOTE_TEXT_LIMIT = 220


@dataclass(frozen=True)
class NoteLine:
    """One line of the notes that names some number, under the release heading above it."""

    file: str  # CHANGELOG-1.37.md
    line: int
    release: KubeVersion
    text: str

    def cite(self) -> str:
        text = self.text if len(self.text) <= NOTE_TEXT_LIMIT else self.text[: NOTE_TEXT_LIMIT - 3] + "..."
        return f"{self.file}:{self.line} (# {self.release.tag}): {text}"


@dataclass
class ReleaseNotes:
    """The release notes of some minors: which releases each file has, and where each number is named."""

    source: str
    releases: dict[int, list[KubeVersion]] = field(default_factory=dict)  # minor -> headings, newest first
    mentions: dict[int, list[NoteLine]] = field(default_factory=dict)  # number -> lines naming it
    by_text: dict[str, list[NoteLine]] = field(default_factory=dict)  # a note's own text -> its lines

    def add(self, name: str, text: str) -> None:
        """Index one CHANGELOG-1.YY.md file (the table of contents before the first heading is skipped)."""
        minor = int(_changelog_minor(name))
        headings = self.releases.setdefault(minor, [])
        release: KubeVersion | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            heading = _HEADING_RE.match(line)
            if heading:
                release = KubeVersion.parse(heading.group(1))
                headings.append(release)
                continue
            if release is None:
                continue
            entry = NoteLine(Path(name).name, number, release, line.strip())
            for match in _MENTION_RE.finditer(line):
                lines = self.mentions.setdefault(int(match.group(1) or match.group(2)), [])
                if entry not in lines:
                    lines.append(entry)
            if _CREDIT_RE.search(line):
                self.by_text.setdefault(note_text(line), []).append(entry)

    def naming(self, number: int, minor: int | None = None) -> list[NoteLine]:
        """The lines naming `number` (in CHANGELOG-1.<minor>.md only, when given), oldest release first."""
        lines = [n for n in self.mentions.get(number, []) if minor is None or n.release.minor == minor]
        return sorted(lines, key=lambda n: (n.release, n.line))

    def newest(self, minor: int) -> KubeVersion | None:
        return max(self.releases[minor]) if self.releases.get(minor) else None


def note_text(line: str) -> str:
    """A release note without its credit and SIG tail: the same for a PR and its cherry-picks."""
    return _SIG_RE.sub("", _CREDIT_RE.sub("", line)).strip().lstrip("- ").strip()


def credited_pr(line: str) -> int | None:
    """The PR a release-note line credits (its `([#N](...)` link)."""
    match = _CREDIT_RE.search(line)
    return int(match.group(1)) if match else None


def _changelog_minor(name: str) -> str:
    match = CHANGELOG_NAME_RE.search(name)
    if match is None:
        raise ValueError(f"{name} is not a CHANGELOG-1.YY.md file")
    return match.group(2)


def notes_from_dir(directory: Path) -> ReleaseNotes:
    """The CHANGELOG-1.YY.md files of a directory (a CHANGELOG/ folder, or a recorded excerpt of one)."""
    notes = ReleaseNotes(str(directory))
    for path in sorted(directory.glob("CHANGELOG-1.*.md")):
        notes.add(path.name, path.read_text(encoding="utf-8"))
    return notes


def notes_from_zip(path: Path) -> ReleaseNotes:
    """The CHANGELOG/CHANGELOG-1.YY.md files of a k8s.io/kubernetes module zip."""
    notes = ReleaseNotes(str(path))
    with zipfile.ZipFile(path) as archive:
        for name in sorted(archive.namelist()):
            if "/CHANGELOG/" in name and CHANGELOG_NAME_RE.search(name):
                notes.add(name, archive.read(name).decode("utf-8"))
    return notes


def pr_number(fix: Fix) -> int | None:
    """The pull request a Fix names first (its text may go on: '#141998 (cherry-pick of #141648)')."""
    match = _NUMBER_RE.search(fix.pr)
    return int(match.group(1)) if match else None


def bug_numbers(bug: KnownBug) -> list[int]:
    """The bug's issue and every pull request its data names."""
    found = [int(n) for n in _NUMBER_RE.findall(bug.issue)]
    for fix in bug.fixes:
        found += [int(n) for n in _NUMBER_RE.findall(fix.pr)]
    return sorted(set(found))


@dataclass(frozen=True)
class Finding:
    """One check of one bug's data: `ok` or a mismatch, with the note lines it rests on."""

    issue: str
    ok: bool
    message: str
    lines: tuple[NoteLine, ...] = ()

    def render(self) -> str:
        head = f"{'ok' if self.ok else 'MISMATCH'} {self.issue}: {self.message}"
        return "\n".join([head, *(f"    {line.cite()}" for line in self.lines)])


def check_fix(bug: KnownBug, fix: Fix, notes: ReleaseNotes) -> Finding:
    """A recorded fix: its PR must first appear in the notes of exactly the release the data names (or the data
    says in `source` how the release was established)."""
    minor = fix.release.minor
    number = pr_number(fix)
    lines = notes.naming(number, minor) if number is not None else []
    newest = notes.newest(minor)
    what = f"fix {fix.release} ({fix.pr.split(' ')[0]})"
    if not lines:
        if fix.source:
            return Finding(bug.issue, True, f"{what}: no release note of 1.{minor}; established by {fix.source}")
        if newest is None:
            why = f"the notes hold no CHANGELOG-1.{minor}.md"
        elif fix.release > newest:
            why = f"the notes of 1.{minor} end at {newest.tag} (a newer module zip holds more)"
        else:
            why = f"no release note of 1.{minor} (to {newest.tag}) names it"
        return Finding(bug.issue, False, f"{what}: {why}; record how the release was established (source=...)")
    first = lines[0].release
    if first == fix.release:
        return Finding(bug.issue, True, f"{what}: first named under {first.tag}", (lines[0],))
    return Finding(
        bug.issue,
        False,
        f"{what}: the notes first name it under {first.tag}, the data says {fix.release}",
        tuple(line for line in lines if line.release == first),
    )


def unlisted_minors(bug: KnownBug, minors: Iterable[int]) -> list[int]:
    """The minors from the bug's first affected one that have no fix entry of their own: unfixed, or fixed
    (the data says) by the mainline fix of an older minor."""
    own = {fix.release.minor for fix in bug.fixes}
    return [minor for minor in sorted(minors) if minor >= bug.first_affected.minor and minor not in own]


def check_unlisted(bug: KnownBug, notes: ReleaseNotes) -> list[Finding]:
    """A branch with no fix entry of its own must have no release note naming the bug's issue or PRs: on a
    branch the data calls unfixed such a note is a fix it lacks; on a newer branch (fixed by the data's
    mainline rule) a note there names the first tag the fix reached it in, which the data must record."""
    findings = []
    minors = unlisted_minors(bug, notes.releases)
    numbers = bug_numbers(bug)
    unfixed = []
    for minor in minors:
        lines = sorted(
            {n for number in numbers for n in notes.naming(number, minor)}, key=lambda n: (n.release, n.line)
        )
        if not lines:
            if bug.fix_for(KubeVersion(1, minor, 0)) is None:
                unfixed.append(minor)
            continue
        named = ", ".join(f"#{n}" for n in numbers if notes.naming(n, minor))
        if bug.fix_for(KubeVersion(1, minor, 0)) is None:
            message = f"1.{minor} is recorded as unfixed, but its release notes name {named}"
        else:
            message = (
                f"1.{minor} has no fix entry (the data derives it from the mainline fix {bug.mainline_fix}), but "
                f"its release notes name {named} first under {lines[0].release.tag}"
            )
        findings.append(Finding(bug.issue, False, message, tuple(lines)))
    if unfixed:
        shown = ", ".join(f"1.{m} (to {tag})" for m in unfixed if (tag := _newest_tag(notes, m)))
        findings.append(Finding(bug.issue, True, f"no release note names it on the unfixed {shown}"))
    return findings


def _newest_tag(notes: ReleaseNotes, minor: int) -> str:
    newest = notes.newest(minor)
    return newest.tag if newest else ""


def check_same_notes(bug: KnownBug, notes: ReleaseNotes) -> list[Finding]:
    """A cherry-pick (or the mainline PR) the data does not list: a release note with the same text as one
    naming the bug's PRs, crediting another PR."""
    known = set(bug_numbers(bug))
    findings = []
    seen: set[NoteLine] = set()
    for number in sorted(known):
        for line in notes.naming(number):
            for other in notes.by_text.get(note_text(line.text), []):
                pr = credited_pr(other.text)
                if pr is None or pr in known or other in seen:
                    continue
                seen.add(other)
                firsts = [n for n in notes.naming(pr) if n.release.minor == other.release.minor]
                first = min(firsts, key=lambda n: (n.release, n.line)) if firsts else other
                if first != other:
                    continue  # reported at its first heading
                message = (
                    f"#{pr} carries the release note of #{number} on 1.{other.release.minor} "
                    f"(first under {other.release.tag}); the data does not list it"
                )
                findings.append(Finding(bug.issue, False, message, (other, line)))
    return findings


def verify(bugs: Sequence[KnownBug], notes: ReleaseNotes) -> list[Finding]:
    """Every check of every bug, in the order of `bugs`."""
    findings: list[Finding] = []
    for bug in bugs:
        if bug.unreported and not bug.fixes:
            findings.append(Finding(bug.issue, True, f"not reported upstream ({bug.finding_page}): no fix to check"))
            continue
        findings += [check_fix(bug, fix, notes) for fix in bug.fixes]
        findings += check_unlisted(bug, notes)
        findings += check_same_notes(bug, notes)
    return findings


@dataclass(frozen=True)
class CheckedNotes:
    """The release notes `device-conformance bugs verify` last found the whole known-bug data agreeing with:
    where they were read, when, and the newest release heading of each CHANGELOG-1.YY.md there (minor -> tag).
    The data vouches for nothing newer: a release cut since may fix or break any bug."""

    source: str
    date: str
    newest: dict[int, KubeVersion]

    def newest_of(self, minor: int) -> KubeVersion | None:
        return self.newest.get(minor)


# `bugs verify` on 2026-11-28: "all 70 checks of 30 known bugs agree with the release notes" of the
# k8s.io/kubernetes v1.38.0-beta.0 module zip (its CHANGELOG/ files; the same newest headings as the excerpt in
# tests/cli/data/changelog-excerpt/). Update after a clean run on newer notes.
CHECKED_AGAINST = CheckedNotes(
    source="k8s.io/kubernetes v1.38.0-beta.0 module zip",
    date="2026-11-28",
    newest={
        minor: KubeVersion.parse(tag)
        for minor, tag in {
            28: "1.28.15",
            29: "1.29.15",
            30: "1.30.14",
            31: "1.31.14",
            32: "1.32.13",
            33: "1.33.13",
            34: "1.34.13",
            35: "1.35.10",
            36: "1.36.6",
            37: "1.37.2",
            38: "1.38.0-alpha.3",
        }.items()
    },
)
