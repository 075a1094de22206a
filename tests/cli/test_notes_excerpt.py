"""The recorded release-notes excerpt (expectations/notes_excerpt.py) and `device-conformance docs` recording it
again: stale by the bug numbers it was recorded for, refused whole when the module zip cannot be had. No network:
the zip is built here and the fetcher injected."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from device_conformance.cli import docs
from device_conformance.cli.main import main
from device_conformance.core.errors import BadInput
from device_conformance.expectations import notes_excerpt
from device_conformance.expectations.behaviour import Fix, KnownBug

TAG = "v1.38.0-beta.0"
MINORS = (37, 38)
LINK = "([#{0}](https://github.com/kubernetes/kubernetes/pull/{0}), [@dev](https://github.com/dev)) [SIG Node]"
NOTE = "- Fixed a bug where NoExecute device taints did not evict pods. " + LINK
BUG = KnownBug("kubernetes#9", "x", "1.36.0", fixes=(Fix("1.38.0-alpha.1", "kubernetes#20"),))
NEW_BUG = KnownBug("kubernetes#30", "y", "1.36.0", fixes=(Fix("1.38.0-alpha.2", "kubernetes#31"),))
CHANGELOGS = {
    "CHANGELOG-1.38.md": [
        "- [v1.38.0-alpha.2](#v1380-alpha2) #20 in the table of contents",
        "# v1.38.0-alpha.2",
        "- Kubelet: shortened DRA service socket paths for drivers with long names. " + LINK.format(31),
        "- Unrelated. " + LINK.format(99),
        "# v1.38.0-alpha.1",
        NOTE.format(20),
    ],
    "CHANGELOG-1.37.md": ["# v1.37.2", NOTE.format(22).replace("@dev", "@other"), "# v1.37.1"],
}


def module_zip(path: Path, tag: str = TAG, files: dict[str, list[str]] = CHANGELOGS) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"k8s.io/kubernetes@{tag}/go.mod", "module k8s.io/kubernetes\n")
        for name, lines in files.items():
            archive.writestr(f"k8s.io/kubernetes@{tag}/CHANGELOG/{name}", "\n".join(lines) + "\n")
    return path


class Fetcher:
    """A fetcher that hands out one zip (or refuses), and remembers the tags asked for."""

    def __init__(self, zip_path: Path | None) -> None:
        self.zip_path, self.asked = zip_path, []

    def __call__(self, tag: str) -> Path:
        self.asked.append(tag)
        if self.zip_path is None:
            raise notes_excerpt.ZipUnavailable(f"`go mod download -json k8s.io/kubernetes@{tag}` gave none: 403")
        return self.zip_path


@pytest.fixture
def recorded(tmp_path) -> Path:
    """An excerpt folder recorded for BUG from the zip of TAG."""
    folder = tmp_path / "excerpt"
    notes_excerpt.write(folder, notes_excerpt.excerpt(module_zip(tmp_path / "m.zip"), [BUG], MINORS))
    return folder


def snapshot(folder: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(folder.iterdir())}


def test_the_excerpt_keeps_headings_and_the_notes_naming_the_bugs_and_their_cherry_picks(recorded):
    assert snapshot(recorded)["CHANGELOG-1.38.md"] == (
        f"<!-- Excerpt of CHANGELOG/CHANGELOG-1.38.md in the k8s.io/kubernetes {TAG} module zip, recorded by "
        "`make docs`. -->\n\n\n# v1.38.0-alpha.2\n\n# v1.38.0-alpha.1\n"
        "- Fixed a bug where NoExecute device taints did not evict pods. "
        "([#20](https://github.com/kubernetes/kubernetes/pull/20))\n"
    )
    assert "([#22](https://github.com/kubernetes/kubernetes/pull/22))" in snapshot(recorded)["CHANGELOG-1.37.md"]
    assert notes_excerpt.recorded(recorded) == notes_excerpt.Recorded(TAG, (9, 20), MINORS)
    assert notes_excerpt.staleness(recorded, [BUG], MINORS) is None


def test_a_bug_added_or_gone_makes_it_stale_naming_the_numbers(recorded):
    assert notes_excerpt.staleness(recorded, [BUG, NEW_BUG], MINORS) == (
        "the bug data names #30, #31 it was not recorded for"
    )
    assert notes_excerpt.staleness(recorded, [], MINORS) == ("it was recorded for #9, #20 the bug data no longer names")
    assert notes_excerpt.staleness(recorded, [BUG], (36, 37, 38)) == (
        "recorded for 1.37 to 1.38, not 1.36 to 1.38; missing CHANGELOG-1.36.md"
    )
    (recorded / notes_excerpt.INDEX).unlink()
    assert (
        notes_excerpt.staleness(recorded, [BUG], MINORS)
        == "no recorded.json saying which bug numbers it was recorded for"
    )
    assert notes_excerpt.recorded_tag(recorded) == TAG  # still read from the files' first line


def test_a_stale_excerpt_is_recorded_again_from_the_zip_of_its_tag(recorded, tmp_path):
    fetch = Fetcher(tmp_path / "m.zip")
    assert notes_excerpt.update(recorded, [BUG], fetch, minors=MINORS) is None
    assert fetch.asked == []  # current: nothing fetched
    files = notes_excerpt.update(recorded, [BUG, NEW_BUG], fetch, minors=MINORS)
    assert fetch.asked == [TAG]
    assert files is not None and "pull/31" in files["CHANGELOG-1.38.md"]
    notes_excerpt.write(recorded, files)
    assert notes_excerpt.staleness(recorded, [BUG, NEW_BUG], MINORS) is None
    assert sorted(p.name for p in recorded.parent.iterdir()) == ["excerpt", "m.zip"]  # no temporary folder left


def test_a_zip_that_cannot_be_had_is_refused_naming_what_was_tried_and_the_fix(recorded):
    before = snapshot(recorded)
    with pytest.raises(BadInput) as refused:
        notes_excerpt.update(recorded, [BUG, NEW_BUG], Fetcher(None), minors=MINORS)
    assert refused.value.problem == (
        "tests/cli/data/changelog-excerpt is stale (the bug data names #30, #31 it was not recorded for); recording "
        f"it again needs the k8s.io/kubernetes {TAG} module zip, and `go mod download -json "
        f"k8s.io/kubernetes@{TAG}` gave none: 403"
    )
    assert refused.value.fix == (
        f"run `make docs` where the Go module proxy serves k8s.io/kubernetes@{TAG} (`go env GOPROXY`), or give the "
        f"zip: device-conformance docs --notes-zip PATH/{TAG}.zip"
    )
    assert snapshot(recorded) == before


def test_a_given_zip_is_recorded_even_when_current_and_its_tag_is_read_from_it(recorded, tmp_path):
    newer = module_zip(tmp_path / "any-name.zip", tag="v1.38.0")
    files = notes_excerpt.update(recorded, [BUG], Fetcher(None), zip_path=newer, minors=MINORS)
    assert files is not None and '"tag": "v1.38.0",' in files[notes_excerpt.INDEX]
    assert "k8s.io/kubernetes v1.38.0 module zip" in files["CHANGELOG-1.38.md"]


def test_a_zip_without_a_minors_changelog_is_refused(tmp_path):
    partial = module_zip(tmp_path / "m.zip", files={"CHANGELOG-1.38.md": ["# v1.38.0-alpha.1"]})
    with pytest.raises(BadInput, match=r"holds no CHANGELOG/CHANGELOG-1\.37\.md"):
        notes_excerpt.excerpt(partial, [BUG], MINORS)


def test_a_write_failing_midway_leaves_the_old_excerpt_whole(recorded, monkeypatch):
    before = snapshot(recorded)
    files = {"CHANGELOG-1.37.md": "new\n", "CHANGELOG-1.38.md": "new\n"}
    real = Path.write_text

    def fail_on_the_second(path, text, *args, **kwargs):
        if path.name == "CHANGELOG-1.38.md":
            raise OSError("disk full")
        return real(path, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", fail_on_the_second)
    with pytest.raises(OSError):
        notes_excerpt.write(recorded, files)
    monkeypatch.undo()
    assert snapshot(recorded) == before


def test_docs_writes_nothing_when_the_zip_cannot_be_had(tmp_path, monkeypatch, capsys):
    """`device-conformance docs` asks for the zip before it writes any doc."""
    root = tmp_path / "checkout"
    folder = root / notes_excerpt.FOLDER
    notes_excerpt.write(folder, notes_excerpt.excerpt(module_zip(tmp_path / "m.zip"), [BUG], MINORS))  # stale
    before = snapshot(folder)
    monkeypatch.setattr(docs, "checkout", lambda: root)
    monkeypatch.setattr(docs, "module_zip", Fetcher(None))
    monkeypatch.setattr(docs, "generate", lambda root: pytest.fail("generated docs before the zip was had"))
    assert main(["docs"]) == 2
    err = capsys.readouterr().err
    assert f"recording it again needs the k8s.io/kubernetes {TAG} module zip" in err
    assert "fix: run `make docs` where the Go module proxy serves" in err
    assert snapshot(folder) == before and sorted(p.name for p in root.iterdir()) == ["tests"]


def test_the_fetcher_names_what_it_ran(monkeypatch, tmp_path):
    monkeypatch.setattr(docs, "which_go", lambda: None)
    with pytest.raises(notes_excerpt.ZipUnavailable, match="no Go toolchain is on PATH to run `go mod download"):
        docs.module_zip(TAG)
    monkeypatch.setattr(docs, "which_go", lambda: "go")
    refused = f"k8s.io/kubernetes@{TAG}: reading https://proxy.golang.org/k8s.io/kubernetes/@v/{TAG}.zip: 403 Forbidden"
    monkeypatch.setattr(docs, "go_mod_download", lambda specs, go: ([{"Error": refused}], refused))
    with pytest.raises(notes_excerpt.ZipUnavailable) as unavailable:
        docs.module_zip(TAG)
    assert str(unavailable.value) == f"`go mod download -json k8s.io/kubernetes@{TAG}` gave none: {refused}"
    off = f"k8s.io/kubernetes@{TAG}: k8s.io/kubernetes@{TAG}: module lookup disabled by GOPROXY=off"
    monkeypatch.setattr(docs, "go_mod_download", lambda specs, go: ([{"Error": off}], off))
    with pytest.raises(notes_excerpt.ZipUnavailable, match=f"gave none: k8s.io/kubernetes@{TAG}: module lookup"):
        docs.module_zip(TAG)
    # a zip whose go.mod needs a newer Go: the record's Error, and its Zip all the same
    zip_path = module_zip(tmp_path / f"{TAG}.zip")
    too_new = f"k8s.io/kubernetes@{TAG} requires go >= 1.27.0 (running go 1.26.8; GOTOOLCHAIN=local)"
    monkeypatch.setattr(
        docs, "go_mod_download", lambda specs, go: ([{"Zip": str(zip_path), "Error": too_new}], too_new)
    )
    assert docs.module_zip(TAG) == zip_path
