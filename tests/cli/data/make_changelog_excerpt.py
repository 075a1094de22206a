"""Record the excerpt of upstream's release notes that tests/cli/test_bugs_verify.py checks the bug data against.

    .venv/bin/python tests/cli/data/make_changelog_excerpt.py \
        ~/go/pkg/mod/cache/download/k8s.io/kubernetes/@v/v1.38.0-beta.0.zip tests/cli/data/changelog-excerpt

Keeps, for CHANGELOG-1.28.md to CHANGELOG-1.38.md, every release heading and each note that names a known bug's
issue or PR (or shares such a note's text), the note cut to 80 characters and its credit to the PR link.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from device_conformance.expectations import release_notes
from device_conformance.expectations.bugtable import KNOWN_BUGS

MINORS = range(28, 39)


def main(zip_path: Path, out: Path) -> None:
    tag = zip_path.name.removesuffix(".zip")
    notes = release_notes.notes_from_zip(zip_path)
    numbers = {number for bug in KNOWN_BUGS for number in release_notes.bug_numbers(bug)}
    wanted = set()
    for number in numbers:
        for line in notes.naming(number):
            wanted.add((line.file, line.line))
            wanted.update((o.file, o.line) for o in notes.by_text.get(release_notes.note_text(line.text), []))
    out.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path) as archive:
        for minor in MINORS:
            name = f"CHANGELOG-1.{minor}.md"
            text = archive.read(f"k8s.io/kubernetes@{tag}/CHANGELOG/{name}").decode()
            keep = [
                f"<!-- Excerpt of CHANGELOG/{name} in the k8s.io/kubernetes {tag} module zip, recorded by "
                "tests/cli/data/make_changelog_excerpt.py. -->",
                "",
            ]
            started = False
            for number, line in enumerate(text.splitlines(), 1):
                if line.startswith("# v"):
                    started = True
                    keep += ["", line]
                elif started and (name, number) in wanted:
                    pr = release_notes.credited_pr(line)
                    body = release_notes.note_text(line)
                    body = body if len(body) <= 80 else body[:77] + "..."
                    keep.append(f"- {body} ([#{pr}](https://github.com/kubernetes/kubernetes/pull/{pr}))")
            (out / name).write_text("\n".join(keep) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
