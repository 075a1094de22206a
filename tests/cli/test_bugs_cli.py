"""`device-conformance bugs`: the catalogue as text and JSON, and the per-release verdict from the data."""

import json

import pytest

from device_conformance.cli.main import main
from device_conformance.expectations.bugtable import KNOWN_BUGS
from device_conformance.expectations.versions import KubeVersion


def run(capsys, *argv):
    code = main(["bugs", *argv])
    return code, capsys.readouterr()


def test_lists_every_catalogued_bug(capsys):
    code, out = run(capsys)
    assert code == 0
    for bug in KNOWN_BUGS:
        assert f"{bug.issue}: {bug.title}" in out.out
    assert out.out.rstrip().endswith(f"{len(KNOWN_BUGS)} known bugs")


@pytest.mark.parametrize(
    ("version", "issue", "affected"),
    [
        # kubernetes#126341: cherry-picked to 1.28.14, 1.29.9, 1.30.5, 1.31.1; mainline 1.32.0.
        ("1.31.0", "kubernetes#126341", True),
        ("1.31.1", "kubernetes#126341", False),
        ("1.30.4", "kubernetes#126341", True),
        ("1.30.5", "kubernetes#126341", False),
        ("1.37.1", "kubernetes#126341", False),
        # kubernetes#134434: 1.33 and 1.34 only, fixed in 1.35.0 with no cherry-pick.
        ("1.32.13", "kubernetes#134434", False),
        ("1.34.10", "kubernetes#134434", True),
        ("1.35.0", "kubernetes#134434", False),
        # kubernetes#127803: per-socket endpoints arrived in 1.37.0; 1.36.4 still has the bug.
        ("1.36.4", "kubernetes#127803", True),
        ("1.37.0", "kubernetes#127803", False),
    ],
)
def test_json_says_whether_the_release_is_affected(capsys, version, issue, affected):
    code, out = run(capsys, "--json", "--k8s-version", version)
    assert code == 0
    entries = {entry["issue"]: entry for entry in json.loads(out.out)}
    assert set(entries) == {bug.issue for bug in KNOWN_BUGS}
    assert entries[issue]["affected"] is affected
    assert entries[issue]["version"] == version


def test_text_counts_the_bugs_of_the_release(capsys):
    code, out = run(capsys, "--k8s-version", "1.37.1")
    affected = [bug for bug in KNOWN_BUGS if bug.affects(KubeVersion.parse("1.37.1"))]
    assert code == 0
    assert f"{len(affected)} of {len(KNOWN_BUGS)} known bugs affect Kubernetes 1.37.1" in out.out


def test_a_minor_alone_is_refused_with_the_fix(capsys):
    code, out = run(capsys, "--k8s-version", "1.34")
    assert code == 2
    assert "'1.34' is not a Kubernetes release version" in out.err
    assert "fix: use MAJOR.MINOR.PATCH" in out.err
