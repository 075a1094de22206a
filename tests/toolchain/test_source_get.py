"""`k8s-source get`: which module goes where, and the assembled tree, from a fake module cache."""

import os
import stat
from pathlib import Path

import fake_k8s_tree
import pytest
from fake_k8s_tree import module_cache

from device_conformance.cli.main import main
from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import source_get, source_tree

V = KubeVersion(1, 37, 1)


def test_the_plan_puts_kubernetes_at_the_root_and_each_staging_module_under_staging_src(tmp_path):
    kubernetes, staging = module_cache(tmp_path / "mod")
    plan = source_get.assembly_plan(V, kubernetes, staging)
    assert [(p.module, p.version, p.target) for p in plan] == [
        ("k8s.io/kubernetes", "v1.37.1", "."),
        ("k8s.io/api", "v0.37.1", "staging/src/k8s.io/api"),
        ("k8s.io/kubelet", "v0.37.1", "staging/src/k8s.io/kubelet"),
        # not k8s.io/sample-controller (in go.work only): no server binary imports it, and the proxy answers
        # 403 for it at some versions (v0.37.2)
    ]
    assert plan[1].source == tmp_path / "mod" / "k8s.io/api@v0.37.1"


def test_the_plan_refuses_missing_or_mismatched_staging_modules(tmp_path):
    kubernetes, staging = module_cache(tmp_path / "mod")
    with pytest.raises(BadInput, match=r"not downloaded: k8s\.io/kubelet"):
        source_get.assembly_plan(V, kubernetes, [s for s in staging if s["Path"] != "k8s.io/kubelet"])
    staging[0]["Version"] = "v0.37.0"
    with pytest.raises(BadInput, match=r"must be at v0\.37\.1, got k8s\.io/api@v0\.37\.0"):
        source_get.assembly_plan(V, kubernetes, staging)


def _fake_downloads(monkeypatch, tmp_path):
    kubernetes, staging = module_cache(tmp_path / "mod")
    asked = []

    def download(specs, version):
        asked.append(list(specs))
        if specs == [f"k8s.io/kubernetes@{version.tag}"]:
            return [kubernetes]
        by_spec = {f"{r['Path']}@{r['Version']}": r for r in staging}
        return [by_spec[spec] for spec in specs]

    monkeypatch.setattr(source_get, "download_modules", download)
    return asked


def test_get_assembles_a_writable_tree_that_knows_its_version(tmp_path, monkeypatch):
    asked = _fake_downloads(monkeypatch, tmp_path)
    target = tmp_path / "src" / "k8s"
    target.parent.mkdir()
    source_get.get_tree(V, target, progress=lambda _: None)
    assert asked[1] == ["k8s.io/api@v0.37.1", "k8s.io/kubelet@v0.37.1"]
    # the workspace names only the modules the tree holds
    assert (target / "go.work").read_text() == fake_k8s_tree.go_work(("k8s.io/api", "k8s.io/kubelet"))
    assert not (target / "staging/src/k8s.io/sample-controller").exists()
    source_tree.check_tree(target)
    found = source_tree.tree_version(target)
    assert found is not None and found.version == V
    manager = target / "pkg/kubelet/cm/devicemanager/manager.go"
    assert os.access(manager, os.W_OK) and stat.S_IMODE(manager.stat().st_mode) == 0o644
    assert stat.S_IMODE((target / "hack/update-codegen.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((target / "staging/src/k8s.io/api").stat().st_mode) & 0o200
    assert (target / "staging/README.md").is_file()  # the zip's own staging/ files stay
    assert sorted(p.name for p in target.parent.iterdir()) == ["k8s"]  # no partial directory left


def test_a_refused_module_no_server_binary_imports_becomes_an_empty_stand_in(tmp_path, monkeypatch):
    kubernetes, staging = module_cache(tmp_path / "mod", not_served=("k8s.io/ktesting",))
    asked = []

    def download(specs, version):
        asked.append(list(specs))
        by_spec = {f"{r['Path']}@{r['Version']}": r for r in staging}
        return [kubernetes] if specs == [f"k8s.io/kubernetes@{version.tag}"] else [by_spec[spec] for spec in specs]

    def try_download(specs, version, go):
        asked.append(list(specs))
        return [], "k8s.io/ktesting@v0.37.1: reading https://proxy.golang.org/...: 403 Forbidden"

    monkeypatch.setattr(source_get, "download_modules", download)
    monkeypatch.setattr(source_get, "download_for_version", try_download)
    monkeypatch.setattr(source_get, "go_binary", lambda: "go")
    said = []
    target = tmp_path / "k8s"
    source_get.get_tree(V, target, progress=said.append)
    assert asked[1:] == [["k8s.io/api@v0.37.1", "k8s.io/kubelet@v0.37.1"], ["k8s.io/ktesting@v0.37.1"]]
    assert (target / "staging/src/k8s.io/ktesting/go.mod").read_text().splitlines()[-1] == "module k8s.io/ktesting"
    assert [p.name for p in (target / "staging/src/k8s.io/ktesting").iterdir()] == ["go.mod"]
    source_tree.check_tree(target)
    assert any("k8s.io/ktesting@v0.37.1: the Go module proxy refuses it" in line for line in said), said


def test_get_refuses_a_directory_that_is_not_empty(tmp_path, monkeypatch):
    _fake_downloads(monkeypatch, tmp_path)
    (tmp_path / "k8s").mkdir()
    (tmp_path / "k8s" / "mine.go").write_text("package mine\n")
    with pytest.raises(BadInput, match="not an empty directory"):
        source_get.get_tree(V, tmp_path / "k8s", progress=lambda _: None)


def test_the_cli_verb_gets_a_tree(tmp_path, monkeypatch, capsys):
    _fake_downloads(monkeypatch, tmp_path)
    assert main(["k8s-source", "get", "1.37.1", str(tmp_path / "k8s")]) == 0
    assert f"K8S_SOURCE={tmp_path / 'k8s'}" in capsys.readouterr().out
    assert main(["k8s-source", "get", "1.37", str(tmp_path / "other")]) == 2
    assert not Path(tmp_path / "other").exists()


def test_the_workspace_loses_only_the_staging_modules_left_out():
    work = "go 1.27.0\n\nuse (\n\t.\n\t./staging/src/k8s.io/api\n\t./staging/src/k8s.io/sample-apiserver\n"
    work += "\t./staging/src/k8s.io/sample-cli-plugin\n\t./staging/src/k8s.io/sample-controller\n)\n"
    assert source_tree.without_unbuilt_staging(work) == (
        "go 1.27.0\n\nuse (\n\t.\n\t./staging/src/k8s.io/api\n\t./staging/src/k8s.io/sample-apiserver\n)\n"
    )


def test_a_tree_needing_a_newer_go_builds_with_its_go_version(tmp_path):
    tree = tmp_path / "k8s"
    tree.mkdir()
    (tree / "go.mod").write_text("module k8s.io/kubernetes\n\ngo 1.27.0\n")
    assert source_tree.tree_toolchain(tree, "go1.26.8") == "go1.27.0"
    (tree / ".go-version").write_text("1.27.3\n")
    assert source_tree.tree_toolchain(tree, "go1.26.8") == "go1.27.3"
    assert source_tree.tree_toolchain(tree, "go1.27.4") is None
