"""A release is built as a K8S_SOURCE tree of it is, so a patched tree finds the release's packages in Go's cache.

Go's build cache keys a package by its files' content, its dependencies, the toolchain and the flags; with
-trimpath not by its directory (cmd/go/internal/work/exec.go, buildActionID). The two builds must therefore
differ in nothing but the tree's path and the output directory. No real build here: `go` is never run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from fake_k8s_tree import source_tree

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import binaries, source_build

V = KubeVersion(1, 37, 2)
QUIET = {"progress": lambda _: None}


@pytest.fixture
def go_runs(tmp_path, monkeypatch):
    """Every `go build` build_tree would run (argv, cwd, env, ...), faked: it writes the binaries it names."""
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(source_build, "go_binary", lambda *a: "/usr/local/go/bin/go")
    monkeypatch.setattr(source_build, "local_go_version", lambda go: "go1.26.8")
    monkeypatch.setattr(binaries, "_download_release", lambda *a: False)
    monkeypatch.setattr(source_build, "download_modules", lambda modules, version: [{}])
    runs: list[dict] = []

    def run_go(argv, workdir, label, progress, env=None, packages=(), flags=()):
        assert Path(workdir).is_dir(), "the tree is there while it builds"
        out = Path(argv[argv.index("-o") + 1])
        for package in packages:
            (out / package.rsplit("/", 1)[-1]).write_text(f"built from {workdir}")
        runs.append({"argv": argv, "cwd": workdir, "env": env, "packages": packages, "flags": flags, "label": label})
        return 1.0

    def get_tree(version, target, progress=print):
        source_tree(target, version_defs=version.tag)
        return []

    monkeypatch.setattr(source_build, "run_go", run_go)
    monkeypatch.setattr(source_build, "get_tree", get_tree)
    return runs


def _normalized(run: dict, tree: Path, out: Path) -> dict:
    """A run with its tree and output directory named by role, so two builds compare as equal."""

    def name(value):
        return str(value).replace(str(out), "<out>").replace(str(tree), "<tree>")

    return {
        "argv": [name(arg) for arg in run["argv"]],
        "cwd": name(run["cwd"]),
        "env": {key: name(value) for key, value in run["env"].items()},
        "packages": list(run["packages"]),
        "flags": list(run["flags"]),
        "label": name(run["label"]),
    }


def test_a_release_and_a_patched_tree_of_it_build_alike_apart_from_the_tree_path(go_runs, tmp_path, monkeypatch):
    monkeypatch.setattr(
        source_build, "tree_inputs", lambda tree, version, components: source_build.TreeInputs("d" * 64, 1, 1, 0.1)
    )
    release = binaries.ensure_binaries(V, **QUIET)
    patched_tree = source_tree(tmp_path / "elsewhere" / "k8s-src", version_defs=V.tag)
    (patched_tree / "pkg/kubelet/cm/devicemanager/manager.go").write_text("package devicemanager // patched\n")
    patched = binaries.ensure_binaries(V, source_tree=patched_tree, **QUIET)
    assert (release.source, patched.source) == ("go build", f"go build of {patched_tree}")
    first, second = go_runs
    release_tree = Path(first["cwd"])
    assert release_tree.parent == tmp_path / "cache" / "gobuild" and release_tree != patched_tree
    release_out = release.directory.with_name(f"{release.directory.name}.partial-{os.getpid()}")
    patched_out = patched.directory.with_name(f"{patched.directory.name}.partial-{os.getpid()}")
    assert _normalized(first, release_tree, release_out) == _normalized(second, patched_tree, patched_out)
    # What makes the keys independent of the path, and one build cache for both (GOCACHE as the user has it).
    assert "-trimpath" in first["argv"] and first["env"].get("GOCACHE") == os.environ.get("GOCACHE")
    assert not any(str(release_tree) in value for value in first["env"].values())
    assert "-X k8s.io/component-base/version.gitVersion=v1.37.2" in first["argv"][first["argv"].index("-ldflags") + 1]


def test_the_release_tree_is_removed_after_the_build_also_when_interrupted(go_runs, tmp_path, monkeypatch):
    source_build.build_release(V, tmp_path, binaries.KUBELET_ONLY, **QUIET)
    assert list((tmp_path / "cache" / "gobuild").iterdir()) == [] and len(go_runs) == 1

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(source_build, "run_go", interrupted)
    with pytest.raises(KeyboardInterrupt):
        source_build.build_release(V, tmp_path, binaries.KUBELET_ONLY, **QUIET)
    assert list((tmp_path / "cache" / "gobuild").iterdir()) == []


def test_a_tree_left_by_a_killed_build_is_removed_by_the_next(go_runs, tmp_path):
    gone = subprocess.Popen(["true"])
    gone.wait()
    orphan = source_tree(source_build.release_tree_dir(V, pid=gone.pid))
    partial = source_tree(orphan.with_name(f"{orphan.name}.partial-{gone.pid}"))
    other_version = source_tree(source_build.release_tree_dir(KubeVersion(1, 37, 1), pid=gone.pid))
    source_build.build_release(V, tmp_path, binaries.KUBELET_ONLY, **QUIET)
    assert not orphan.exists() and not partial.exists() and other_version.is_dir()


def test_a_release_whose_tree_cannot_be_assembled_is_built_from_a_wrapper_module(go_runs, tmp_path, monkeypatch):
    def refused(version, target, progress=print):
        raise BadInput("the Go module proxy answers 403 for k8s.io/sample-apiserver@v0.37.2", "pick another")

    wrapper: list[tuple] = []
    monkeypatch.setattr(source_build, "get_tree", refused)
    monkeypatch.setattr(source_build, "build_kubernetes", lambda *args: wrapper.append(args[:3]))
    said: list[str] = []
    source_build.build_release(V, tmp_path, binaries.KUBELET_ONLY, progress=said.append)
    assert wrapper == [(V, tmp_path, binaries.KUBELET_ONLY)] and go_runs == []
    assert any("403" in line and "wrapper module" in line for line in said)
    assert list((tmp_path / "cache" / "gobuild").glob("*-tree-*")) == []


def test_a_release_the_proxy_lacks_fails_once_with_its_own_error(go_runs, monkeypatch, tmp_path):
    """No tree and no fallback for a version that does not exist: the user reads the proxy's refusal once."""
    from device_conformance.core.errors import BadInput

    def refused(modules, version):
        raise BadInput(f"K8S_VERSION={version} cannot be fetched", "pick a released version")

    said: list[str] = []
    monkeypatch.setattr(source_build, "download_modules", refused)
    monkeypatch.setattr(source_build, "get_tree", lambda *a: pytest.fail("no tree for a release the proxy lacks"))
    monkeypatch.setattr(source_build, "build_kubernetes", lambda *a: pytest.fail("no fallback build either"))
    with pytest.raises(BadInput, match="cannot be fetched"):
        source_build.build_release(V, tmp_path / "out", ("kubelet",), said.append)
    assert said == []
