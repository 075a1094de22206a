"""`device-conformance versions`: the Go module proxy's answers (a fake `go` on PATH playing a recorded world),
the matrix and the bug data, per minor; exact output lines."""

from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

import pytest

from device_conformance.cli import versions as versions_cli
from device_conformance.cli.main import main
from device_conformance.expectations.behaviour import Fix, KnownBug
from device_conformance.expectations.release_notes import CheckedNotes
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import gobuild

V = KubeVersion.parse
FORBIDDEN = (
    "reading https://proxy.golang.org/{path}/@v/{version}.zip: 403 Forbidden\n"
    "\tserver response: This module version is not available."
)
NO_SUM = "verifying module: {path}@{version}: reading https://sum.golang.org/lookup/{path}@{version}: 404 Not Found"

# The fake `go`: `go env GOVERSION`, `go list -m -json -versions MODULE` and `go mod download -json SPEC...`
# answered from the JSON world file named by $FAKE_GO_WORLD; every call is appended to $FAKE_GO_WORLD.calls.
FAKE_GO = """#!{python}
import json, os, sys
world = json.load(open(os.environ["FAKE_GO_WORLD"]))
with open(os.environ["FAKE_GO_WORLD"] + ".calls", "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
if args[:2] == ["env", "GOVERSION"]:
    print("go1.26.8")
elif args[:2] == ["list", "-m"]:
    print(json.dumps({{"Path": args[-1], "Versions": world["listed"]}}))
elif args[:3] == ["mod", "download", "-json"]:
    failed = False
    for spec in args[3:]:
        path, version = spec.split("@")
        record = {{"Path": path, "Version": version}}
        answer = world["modules"].get(spec, {{"error": "403"}})
        if "error" in answer:
            template = {{"403": {forbidden!r}, "nosum": {no_sum!r}}}[answer["error"]]
            record["Error"] = spec + ": " + template.format(path=path, version=version)
            failed = True
        else:
            record.update({{k: v for k, v in answer.items()}})
        print(json.dumps(record, indent=1))
    sys.exit(1 if failed else 0)
else:
    sys.exit("fake go: unexpected " + " ".join(args))
"""

GOMOD = """module k8s.io/kubernetes

go 1.26.0

require (
\tgithub.com/a/b v1.2.3
\tk8s.io/api v0.0.0
\tk8s.io/sample-apiserver v0.0.0 // indirect
{extra})

replace (
\tk8s.io/api => ./staging/src/k8s.io/api
\tk8s.io/sample-apiserver => ./staging/src/k8s.io/sample-apiserver
\tk8s.io/sample-controller => ./staging/src/k8s.io/sample-controller
)
"""

NOTES = {
    "CHANGELOG-1.36.md": ["# v1.36.6", "# v1.36.5", "# v1.36.4"],
    "CHANGELOG-1.37.md": ["# v1.37.2", "# v1.37.1"],
    "CHANGELOG-1.38.md": ["# v1.38.0-alpha.1"],
}


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A Go module proxy with 1.36.6 refused, 1.36.5 buildable, 1.37.2 without a checksum entry, 1.37.1 buildable
    and 1.38.0-beta.0 downloadable with a build module refused; the notes in 1.38.0-beta.0's zip name 1.36.6,
    1.37.2 and 1.38.0-alpha.1. The matrix runs 1.36.4 and 1.37.1."""
    notes_zip = tmp_path / "v1.38.0-beta.0.zip"
    with zipfile.ZipFile(notes_zip, "w") as archive:
        for name, headings in NOTES.items():
            archive.writestr(f"k8s.io/kubernetes@v1.38.0-beta.0/CHANGELOG/{name}", "\n".join(headings) + "\n")

    def gomod(name: str, extra: str = "") -> str:
        path = tmp_path / f"{name}.mod"
        path.write_text(GOMOD.format(extra=extra))
        return str(path)

    modules = {
        "k8s.io/kubernetes@v1.38.0-beta.0": {
            "Zip": str(notes_zip),
            "GoMod": gomod("v1.38.0-beta.0", "\tsigs.k8s.io/iptables-wrappers v1.0.0\n"),
        },
        "k8s.io/api@v0.38.0-beta.0": {},
        "sigs.k8s.io/iptables-wrappers@v1.0.0": {"error": "403"},
        "k8s.io/kubernetes@v1.37.2": {"error": "nosum"},
        "k8s.io/kubernetes@v1.37.1": {"GoMod": gomod("v1.37.1")},
        "k8s.io/api@v0.37.1": {},
        "k8s.io/kubernetes@v1.36.5": {"GoMod": gomod("v1.36.5")},
        "k8s.io/api@v0.36.5": {},
        "github.com/a/b@v1.2.3": {},
    }
    data = tmp_path / "world.json"
    data.write_text(json.dumps({"listed": ["v1.36.3", "v1.37.1", "v1.38.0-beta.0"], "modules": modules}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    go = bin_dir / "go"
    go.write_text(FAKE_GO.format(python=sys.executable, forbidden=FORBIDDEN, no_sum=NO_SUM))
    go.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    monkeypatch.setenv("FAKE_GO_WORLD", str(data))
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("GOTMPDIR", raising=False)
    monkeypatch.setattr(gobuild, "_TOOLCHAINS", {})
    monkeypatch.setattr(versions_cli, "MATRIX_VERSIONS", (V("1.36.4"), V("1.37.1")))
    bug = KnownBug(
        "kubernetes#9", "x", "1.36.0", fixes=(Fix("1.38.0-alpha.1", "kubernetes#20"), Fix("1.37.2", "kubernetes#21"))
    )
    monkeypatch.setattr(versions_cli, "KNOWN_BUGS", (bug,))
    checked = CheckedNotes("the v1.38.0-beta.0 zip", "2026-11-28", {36: V("1.36.6"), 37: V("1.37.1")})
    monkeypatch.setattr(versions_cli, "CHECKED_AGAINST", checked)
    return data


def run(capsys, *args):
    code = main(["versions", *args])
    return code, capsys.readouterr().out.splitlines()


def test_each_minor_names_the_newest_listed_verified_and_buildable_release(world, capsys, monkeypatch):
    monkeypatch.setattr(versions_cli.datetime, "date", type("D", (), {"today": staticmethod(lambda: _Day())}))
    code, lines = run(capsys)
    assert code == 0
    assert lines == [
        "Kubernetes releases on the Go module proxy (2026-11-28; release notes: v1.38.0-beta.0.zip; bug data "
        "checked against: the v1.38.0-beta.0 zip, 2026-11-28)",
        "1.36",
        "  proxy lists: 1.36.3; release notes name: 1.36.6",
        "  1.36.6: the proxy answers 403 Forbidden",
        "  1.36.5: downloads and verifies; build modules: all 2 served",
        "  newest that downloads and verifies: 1.36.5; newest whose build modules are all served: 1.36.5",
        "  matrix: 1.36.4; newest release a bug fix names: none; bug data checked against release notes to: 1.36.6",
        "1.37",
        "  proxy lists: 1.37.1; release notes name: 1.37.2",
        "  1.37.2: the checksum database answers 404 Not Found",
        "  1.37.1: downloads and verifies; build modules: all 2 served",
        "  newest that downloads and verifies: 1.37.1; newest whose build modules are all served: 1.37.1",
        "  matrix: 1.37.1; newest release a bug fix names: 1.37.2 (kubernetes#21); bug data checked against release "
        "notes to: 1.37.1",
        "1.38",
        "  proxy lists: 1.38.0-beta.0; release notes name: 1.38.0-alpha.1",
        "  1.38.0-beta.0: downloads and verifies; build modules: 1 of 3 refused: sigs.k8s.io/iptables-wrappers@v1.0.0 "
        "(the proxy answers 403 Forbidden)",
        "  newest that downloads and verifies: 1.38.0-beta.0; newest whose build modules are all served: none",
        "  matrix: none; newest release a bug fix names: 1.38.0-alpha.1 (kubernetes#20); bug data checked against "
        "release notes to: none",
        "",
        "1.36: upstream has 1.36.6, the matrix runs 1.36.4 (1.36.5 builds here)",
        "1.37: upstream has 1.37.2, the matrix runs 1.37.1",
        "1.37: upstream has 1.37.2, the bug data was checked against release notes to 1.37.1",
        "1.38: upstream has 1.38.0-beta.0, the matrix runs no 1.38 release (1.38.0-beta.0 is not buildable here: "
        "sigs.k8s.io/iptables-wrappers@v1.0.0)",
        "1.38: upstream has 1.38.0-beta.0, the bug data was checked against release notes with no 1.38 notes",
    ]
    calls = Path(f"{world}.calls").read_text().splitlines()
    # the staging modules at the version's v0 tag; sample-apiserver (imported by no server binary) and the
    # unbuilt sample-controller are not asked for
    assert "mod download -json k8s.io/api@v0.36.5 github.com/a/b@v1.2.3" in calls
    assert not any("sample-" in call for call in calls)
    # newest first, stopping at the first buildable release: neither the matrix's 1.36.4 nor 1.36.3 is tried
    assert not any("@v1.36.4" in call or "@v1.36.3" in call for call in calls)


class _Day:
    def isoformat(self) -> str:
        return "2026-11-28"


def test_offline_reads_only_the_data(world, capsys):
    code, lines = run(capsys, "--offline")
    assert code == 0
    assert lines == [
        "Kubernetes releases the data knows of (offline; release notes: the v1.38.0-beta.0 zip, 2026-11-28)",
        "1.36",
        "  matrix: 1.36.4; newest release a bug fix names: none; bug data checked against release notes to: 1.36.6",
        "1.37",
        "  matrix: 1.37.1; newest release a bug fix names: 1.37.2 (kubernetes#21); bug data checked against release "
        "notes to: 1.37.1",
        "1.38",
        "  matrix: none; newest release a bug fix names: 1.38.0-alpha.1 (kubernetes#20); bug data checked against "
        "release notes to: none",
        "",
        "1.36: upstream has 1.36.6, the matrix runs 1.36.4",
    ]
    assert not Path(f"{world}.calls").exists(), "offline must not run go"


def test_json_has_every_probe(world, capsys):
    code, lines = run(capsys, "--json")
    document = json.loads("\n".join(lines))
    assert code == 0 and document["offline"] is False
    by_minor = {entry["minor"]: entry for entry in document["minors"]}
    assert by_minor["1.37"]["newest_verified"] == "1.37.1" and by_minor["1.37"]["upstream"] == "1.37.2"
    assert by_minor["1.37"]["probes"][0] == {
        "version": "1.37.2",
        "verified": False,
        "problem": "the checksum database answers 404 Not Found",
        "modules": 0,
        "refused_modules": {},
    }
    assert by_minor["1.38"]["probes"][0]["refused_modules"] == {
        "sigs.k8s.io/iptables-wrappers@v1.0.0": "the proxy answers 403 Forbidden"
    }
    assert by_minor["1.36"]["newest_buildable"] == "1.36.5" and by_minor["1.36"]["matrix"] == "1.36.4"


def test_without_go_it_says_to_run_offline(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["versions"]) == 2
    assert "run `device-conformance versions --offline`" in capsys.readouterr().err


def test_the_checked_notes_are_those_of_the_recorded_excerpt():
    from device_conformance.expectations.release_notes import CHECKED_AGAINST, notes_from_dir

    excerpt = notes_from_dir(Path(__file__).parent / "data" / "changelog-excerpt")
    assert CHECKED_AGAINST.newest == {minor: excerpt.newest(minor) for minor in excerpt.releases}
