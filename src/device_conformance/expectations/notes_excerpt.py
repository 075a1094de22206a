"""The recorded excerpt of upstream's release notes that `make test` runs `bugs verify` on (FOLDER).

release_notes.py reads and checks notes; this module only records the part of them the known bugs need, so the
test needs no 26 MB module zip. For CHANGELOG-1.28.md to CHANGELOG-1.38.md of one k8s.io/kubernetes module zip the
folder keeps every release heading and each note that names a known bug's issue or PR (or shares such a note's
text, as a cherry-pick's note does), the note cut to 80 characters and its credit to the PR link. INDEX says which
tag it was read from and which bug numbers it was recorded for: the excerpt is stale when KNOWN_BUGS names other
numbers (a bug added, a fix PR recorded), and `make docs` (cli/docs.py) records it again from the same tag.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.expectations import release_notes
from device_conformance.expectations.behaviour import KnownBug

FOLDER = "tests/cli/data/changelog-excerpt"  # in the checkout
INDEX = "recorded.json"
MINORS = range(28, 39)
NOTE_LIMIT = 80
MODULE = "k8s.io/kubernetes"
# Each file's first line; read back for the tag when the folder has no INDEX.
_HEADER = "<!-- Excerpt of CHANGELOG/{name} in the k8s.io/kubernetes {tag} module zip, recorded by `make docs`. -->"
_HEADER_TAG_RE = re.compile(r"in the k8s\.io/kubernetes (\S+) module zip")
# A module zip's files are all under "<module>@<version>/" (golang.org/x/mod/zip).
_ZIP_PREFIX_RE = re.compile(r"^k8s\.io/kubernetes@([^/]+)/")


class ZipUnavailable(ConformanceError):
    """A fetcher could not get the module zip of a tag; the message says what it tried."""


# tag -> the k8s.io/kubernetes module zip of that tag, or ZipUnavailable naming what was tried.
Fetch = Callable[[str], Path]


@dataclass(frozen=True)
class Recorded:
    """What an excerpt was recorded from and for (its INDEX)."""

    tag: str
    numbers: tuple[int, ...]
    minors: tuple[int, ...]

    def to_json(self) -> str:
        index = {"module": MODULE, "tag": self.tag, "minors": list(self.minors), "bug_numbers": list(self.numbers)}
        return json.dumps(index, indent=1) + "\n"


def wanted_numbers(bugs: Iterable[KnownBug]) -> tuple[int, ...]:
    """Every issue and PR number the bug data names: the notes naming them are the excerpt."""
    return tuple(sorted({number for bug in bugs for number in release_notes.bug_numbers(bug)}))


def recorded(folder: Path) -> Recorded | None:
    """The folder's INDEX; None when it has none (or one this code cannot read: recorded again)."""
    try:
        index = json.loads((folder / INDEX).read_text(encoding="utf-8"))
        return Recorded(str(index["tag"]), tuple(index["bug_numbers"]), tuple(index["minors"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def recorded_tag(folder: Path) -> str | None:
    """The tag the folder's excerpt was read from: its INDEX, else a CHANGELOG file's first line."""
    index = recorded(folder)
    if index is not None:
        return index.tag
    for path in sorted(folder.glob("CHANGELOG-1.*.md")):
        match = _HEADER_TAG_RE.search(path.read_text(encoding="utf-8").split("\n", 1)[0])
        if match:
            return match.group(1)
    return None


def staleness(folder: Path, bugs: Sequence[KnownBug], minors: Iterable[int] = MINORS) -> str | None:
    """Why the folder's excerpt is not the one for `bugs` (None: it is). Reads the folder only, no zip."""
    index = recorded(folder)
    if index is None:
        return f"no {INDEX} saying which bug numbers it was recorded for"
    wanted, minors = wanted_numbers(bugs), tuple(minors)
    reasons = []
    added = sorted(set(wanted) - set(index.numbers))
    gone = sorted(set(index.numbers) - set(wanted))
    if added:
        reasons.append("the bug data names " + _numbers(added) + " it was not recorded for")
    if gone:
        reasons.append("it was recorded for " + _numbers(gone) + " the bug data no longer names")
    if index.minors != minors:
        reasons.append(f"recorded for 1.{index.minors[0]} to 1.{index.minors[-1]}, not 1.{minors[0]} to 1.{minors[-1]}")
    missing = [name for name in _names(minors) if not (folder / name).is_file()]
    if missing:
        reasons.append("missing " + ", ".join(missing))
    return "; ".join(reasons) or None


def _numbers(numbers: Sequence[int]) -> str:
    return ", ".join(f"#{n}" for n in numbers)


def _names(minors: Iterable[int]) -> list[str]:
    return [f"CHANGELOG-1.{minor}.md" for minor in minors]


def zip_tag(zip_path: Path) -> str:
    """The version a k8s.io/kubernetes module zip holds, from its file names."""
    with zipfile.ZipFile(zip_path) as archive:
        for name in archive.namelist():
            match = _ZIP_PREFIX_RE.match(name)
            if match:
                return match.group(1)
    raise BadInput(
        f"{zip_path} is not a {MODULE} module zip", f"give the zip `go mod download -json {MODULE}@vX.Y.Z` names"
    )


def excerpt(zip_path: Path, bugs: Sequence[KnownBug], minors: Iterable[int] = MINORS) -> dict[str, str]:
    """Every file of the excerpt folder for `bugs` (INDEX included), read from a module zip."""
    tag, minors = zip_tag(zip_path), tuple(minors)
    notes = release_notes.notes_from_zip(zip_path)
    numbers = wanted_numbers(bugs)
    wanted = set()
    for number in numbers:
        for line in notes.naming(number):
            wanted.add((line.file, line.line))
            wanted.update((o.file, o.line) for o in notes.by_text.get(release_notes.note_text(line.text), []))
    files = {}
    with zipfile.ZipFile(zip_path) as archive:
        for name in _names(minors):
            try:
                text = archive.read(f"{MODULE}@{tag}/CHANGELOG/{name}").decode("utf-8")
            except KeyError:
                raise BadInput(
                    f"{zip_path} ({MODULE} {tag}) holds no CHANGELOG/{name}",
                    f"give the zip of a {MODULE} release from 1.{minors[-1]} on",
                ) from None
            files[name] = _excerpt_of(name, tag, text, wanted)
    files[INDEX] = Recorded(tag, numbers, minors).to_json()
    return files


def _excerpt_of(name: str, tag: str, text: str, wanted: set[tuple[str, int]]) -> str:
    keep = [_HEADER.format(name=name, tag=tag), ""]
    started = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("# v"):  # the table of contents before the first heading is left out
            started = True
            keep += ["", line]
        elif started and (name, number) in wanted:
            pr = release_notes.credited_pr(line)
            body = release_notes.note_text(line)
            body = body if len(body) <= NOTE_LIMIT else body[: NOTE_LIMIT - 3] + "..."
            keep.append(f"- {body} ([#{pr}](https://github.com/kubernetes/kubernetes/pull/{pr}))")
    return "\n".join(keep) + "\n"


def update(
    folder: Path, bugs: Sequence[KnownBug], fetch: Fetch, zip_path: Path | None = None, minors: Iterable[int] = MINORS
) -> dict[str, str] | None:
    """The excerpt's files to write when it is stale or `zip_path` is given (None: it is current). Reads the zip
    of the tag it was recorded from through `fetch`; when that fails, BadInput naming what was tried and the way
    out, before anything is written."""
    reason = staleness(folder, bugs, minors)
    if zip_path is None:
        if reason is None:
            return None
        tag = recorded_tag(folder)
        if tag is None:
            raise BadInput(
                f"{FOLDER} is stale ({reason}) and says no {MODULE} tag to record it again from",
                "give a module zip: device-conformance docs --notes-zip "
                f"~/go/pkg/mod/cache/download/{MODULE}/@v/vX.Y.Z.zip",
            )
        try:
            zip_path = fetch(tag)
        except ZipUnavailable as exc:
            raise BadInput(
                f"{FOLDER} is stale ({reason}); recording it again needs the {MODULE} {tag} module zip, and {exc}",
                f"run `make docs` where the Go module proxy serves {MODULE}@{tag} (`go env GOPROXY`), or give the "
                f"zip: device-conformance docs --notes-zip PATH/{tag}.zip",
            ) from None
    return excerpt(zip_path, bugs, minors)


def write(folder: Path, files: dict[str, str]) -> None:
    """Replace the folder with exactly `files`: written beside it first, then swapped in, so a failure midway
    leaves the old excerpt whole."""
    new = folder.with_name(f".{folder.name}.new")
    old = folder.with_name(f".{folder.name}.old")
    for leftover in (new, old):
        shutil.rmtree(leftover, ignore_errors=True)
    new.mkdir(parents=True)
    for name, text in files.items():
        (new / name).write_text(text, encoding="utf-8")
    if folder.exists():
        folder.rename(old)
    new.rename(folder)
    shutil.rmtree(old, ignore_errors=True)
