"""`device-conformance bugs verify`: the known-bug data checked against upstream's release notes.

tests/cli/data/changelog-excerpt/ is a recorded excerpt of CHANGELOG-1.28.md to CHANGELOG-1.38.md from the
k8s.io/kubernetes v1.38.0-beta.0 module zip, for the bug numbers KNOWN_BUGS names: `make docs` records it again
when they change (expectations/notes_excerpt.py).
"""

from pathlib import Path

import pytest

from device_conformance.cli import bugs as bugs_cli
from device_conformance.cli.main import main
from device_conformance.expectations import notes_excerpt, release_notes
from device_conformance.expectations.behaviour import Fix, KnownBug
from device_conformance.expectations.bugtable import KNOWN_BUGS
from device_conformance.expectations.versions import KubeVersion

EXCERPT = Path(__file__).parent / "data" / "changelog-excerpt"
LINK = "([#{0}](https://github.com/kubernetes/kubernetes/pull/{0}), [@dev](https://github.com/dev)) [SIG Node]"
NOTE = "- Fixed a bug where NoExecute device taints did not evict pods. " + LINK


def verify(capsys, directory):
    code = main(["bugs", "verify", "--changelog-dir", str(directory)])
    return code, capsys.readouterr().out.splitlines()


def test_the_bug_data_agrees_with_the_recorded_release_notes(capsys):
    code, lines = verify(capsys, EXCERPT)
    checks = release_notes.verify(KNOWN_BUGS, release_notes.notes_from_dir(EXCERPT))
    assert code == 0
    assert lines[-1] == f"all {len(checks)} checks of {len(KNOWN_BUGS)} known bugs agree with the release notes"
    assert "ok kubernetes#141290: fix 1.37.2 (kubernetes#142492): first named under v1.37.2" in lines
    assert "ok kubernetes#141290: fix 1.38.0-alpha.1 (kubernetes#142289): first named under v1.38.0-alpha.1" in lines
    assert "ok kubernetes#140274: fix 1.35.10 (kubernetes#140954): first named under v1.35.10" in lines
    assert (
        "ok kubernetes#127803: fix 1.37.0 (kubernetes#135437): no release note of 1.37; established by module source "
        "v1.37.0 pkg/kubelet/cm/devicemanager/manager.go (endpointStore keyed by socket; v1.36.4 and v1.36.5 key "
        "endpoints by resource name); no release note"
    ) in lines


def test_the_excerpt_is_of_the_notes_the_bug_data_was_checked_against():
    recorded = notes_excerpt.recorded(EXCERPT)
    assert recorded is not None
    assert release_notes.CHECKED_AGAINST.source == f"k8s.io/kubernetes {recorded.tag} module zip"
    notes = release_notes.notes_from_dir(EXCERPT)
    assert {minor: notes.newest(minor) for minor in notes.releases} == release_notes.CHECKED_AGAINST.newest


def test_bugs_report_141290_fixed_from_1_37_2(capsys):
    main(["bugs", "--k8s-version", "1.37.2"])
    out = capsys.readouterr().out
    assert "kubernetes#141290  not affected: a pod using a DRA extended resource is not evicted" in out
    assert "    on 1.37.2: fixed in 1.37.2 by kubernetes#142492 (mainline: 1.38.0-alpha.1 by kubernetes#142289)" in out
    main(["bugs", "--k8s-version", "1.37.1"])
    assert "kubernetes#141290  AFFECTED: " in capsys.readouterr().out


def write_notes(directory: Path, files: dict[str, list[str]]) -> Path:
    directory.mkdir(exist_ok=True)
    for name, lines in files.items():
        (directory / name).write_text("\n".join(["<!-- BEGIN MUNGE: GENERATED_TOC -->", "- [#1](x)", *lines]) + "\n")
    return directory


@pytest.fixture
def one_bug(monkeypatch):
    def use(bug: KnownBug) -> None:
        monkeypatch.setattr(bugs_cli, "KNOWN_BUGS", (bug,))

    return use


def test_a_fix_released_elsewhere_than_the_data_says_is_a_mismatch_with_the_note(tmp_path, capsys, one_bug):
    one_bug(KnownBug("kubernetes#9", "x", "1.36.0", fixes=(Fix("1.38.0-alpha.2", "kubernetes#20"),)))
    notes = {"CHANGELOG-1.38.md": ["# v1.38.0-alpha.2", "", "# v1.38.0-alpha.1", "", NOTE.format(20)]}
    code, lines = verify(capsys, write_notes(tmp_path / "n", notes))
    assert code == 1
    assert lines[-3:] == [
        "MISMATCH kubernetes#9: fix 1.38.0-alpha.2 (kubernetes#20): the notes first name it under v1.38.0-alpha.1, "
        "the data says 1.38.0-alpha.2",
        "    CHANGELOG-1.38.md:7 (# v1.38.0-alpha.1): " + NOTE.format(20),
        "1 mismatch in 1 check of 1 known bug",
    ]


def test_a_note_on_a_branch_the_data_calls_unfixed_is_a_mismatch(tmp_path, capsys, one_bug):
    one_bug(KnownBug("kubernetes#9", "x", "1.36.0", fixes=(Fix("1.38.0-alpha.1", "kubernetes#20"),)))
    notes = {
        "CHANGELOG-1.38.md": ["# v1.38.0-alpha.1", NOTE.format(20)],
        "CHANGELOG-1.37.md": ["# v1.37.2", "- Fixes #9 in the scheduler too. " + LINK.format(21), "# v1.37.1"],
        "CHANGELOG-1.36.md": ["# v1.36.6"],
    }
    code, lines = verify(capsys, write_notes(tmp_path / "n", notes))
    assert code == 1
    assert "ok kubernetes#9: no release note names it on the unfixed 1.36 (to v1.36.6)" in lines
    assert (
        "MISMATCH kubernetes#9: 1.37 is recorded as unfixed, but its release notes name #9\n"
        "    CHANGELOG-1.37.md:4 (# v1.37.2): - Fixes #9 in the scheduler too. " + LINK.format(21)
    ) in "\n".join(lines)


def test_a_cherry_pick_with_the_same_note_that_the_data_lacks_is_a_mismatch(tmp_path, capsys, one_bug):
    one_bug(KnownBug("kubernetes#9", "x", "1.36.0", fixes=(Fix("1.38.0-alpha.1", "kubernetes#20"),)))
    notes = {
        "CHANGELOG-1.38.md": ["# v1.38.0-alpha.1", NOTE.format(20)],
        "CHANGELOG-1.37.md": ["# v1.37.2", NOTE.format(22).replace("@dev", "@other")],
    }
    code, lines = verify(capsys, write_notes(tmp_path / "n", notes))
    assert code == 1
    assert (
        "MISMATCH kubernetes#9: #22 carries the release note of #20 on 1.37 (first under v1.37.2); the data does not "
        "list it"
    ) in lines


def test_a_fix_no_note_names_needs_its_source(tmp_path, capsys, one_bug):
    notes = write_notes(tmp_path / "n", {"CHANGELOG-1.37.md": ["# v1.37.2", "# v1.37.1", "# v1.37.0"]})
    one_bug(KnownBug("kubernetes#9", "x", "1.37.0", fixes=(Fix("1.37.0", "kubernetes#20"),)))
    code, lines = verify(capsys, notes)
    assert code == 1
    assert lines[-2] == (
        "MISMATCH kubernetes#9: fix 1.37.0 (kubernetes#20): no release note of 1.37 (to v1.37.2) names it; record "
        "how the release was established (source=...)"
    )
    one_bug(KnownBug("kubernetes#9", "x", "1.37.0", fixes=(Fix("1.37.3", "kubernetes#20"),)))
    code, lines = verify(capsys, notes)
    assert "the notes of 1.37 end at v1.37.2 (a newer module zip holds more)" in lines[-2]
    one_bug(KnownBug("kubernetes#9", "x", "1.37.0", fixes=(Fix("1.37.0", "kubernetes#20", source="module source"),)))
    code, lines = verify(capsys, notes)
    assert code == 0
    assert "ok kubernetes#9: fix 1.37.0 (kubernetes#20): no release note of 1.37; established by module source" in lines


def test_a_changelog_dir_without_changelogs_is_refused(tmp_path, capsys):
    code = main(["bugs", "verify", "--changelog-dir", str(tmp_path)])
    assert code == 2
    assert f"--changelog-dir {tmp_path} holds no CHANGELOG-1.YY.md file" in capsys.readouterr().err


def test_notes_index_the_first_heading_and_skip_the_table_of_contents():
    notes = release_notes.ReleaseNotes("x")
    text = "- [v1.38.0-alpha.1](#v1380-alpha1)\n  [#20](y)\n# v1.38.0-alpha.2\n\n# v1.38.0-alpha.1\n" + NOTE.format(20)
    notes.add("CHANGELOG-1.38.md", text)
    assert notes.releases == {38: [KubeVersion(1, 38, 0, "alpha.2"), KubeVersion(1, 38, 0, "alpha.1")]}
    assert [(n.file, n.line, str(n.release)) for n in notes.naming(20)] == [("CHANGELOG-1.38.md", 6, "1.38.0-alpha.1")]
    assert notes.newest(38) == KubeVersion(1, 38, 0, "alpha.2") and notes.newest(37) is None
    assert release_notes.credited_pr(NOTE.format(20)) == 20
    assert release_notes.note_text(NOTE.format(20)) == "Fixed a bug where NoExecute device taints did not evict pods."
    # digits inside a sha512 hash are no PR number
    notes.add("CHANGELOG-1.34.md", "# v1.34.0-rc.2\n[x.tar.gz](https://dl.k8s.io/x) | d2e91d34fb64832ee3142289adbe")
    assert notes.naming(142289) == []
