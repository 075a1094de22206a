"""Binaries from a source tree: what the cache key covers, entry names, rebuild only on input changes."""

import os
import shutil

import pytest
from fake_k8s_tree import source_tree, write

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import binaries, source_build

V = KubeVersion(1, 37, 1)
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="needs the go command (go list)")


def _digest(tree, packages, external=()):
    files, outside = source_build.input_files(tree, packages)
    return source_build.hash_inputs(tree, files, [*outside, *external], ["recipe"])[0]


def _packages(tree):
    module = {"Path": "k8s.io/kubernetes", "Dir": str(tree)}
    return [
        {"Standard": True, "Dir": "/usr/lib/go/src/fmt", "GoFiles": ["print.go"]},
        {"Dir": str(tree / "pkg/kubelet/cm/devicemanager"), "Module": module, "GoFiles": ["manager.go"]},
        {"Dir": "/mod/github.com/x/y@v1.2.3", "Module": {"Path": "github.com/x/y", "Version": "v1.2.3"}},
    ]


def test_a_go_file_the_build_reads_changes_the_hash_and_a_revert_restores_it(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    before = _digest(tree, _packages(tree))
    manager = tree / "pkg/kubelet/cm/devicemanager/manager.go"
    original = manager.read_text()
    manager.write_text(original.replace('"on"', '"off"'))
    assert _digest(tree, _packages(tree)) != before
    manager.write_text(original)
    assert _digest(tree, _packages(tree)) == before  # content, not mtime


def test_files_the_build_does_not_read_leave_the_hash_alone(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    before = _digest(tree, _packages(tree))
    (tree / "README.md").write_text("edited\n")
    (tree / "pkg/kubelet/cm/devicemanager/manager_test.go").write_text("package devicemanager // edited\n")
    (tree / "pkg/unused/unused.go").write_text("package unused // edited\n")
    assert _digest(tree, _packages(tree)) == before


def test_module_files_and_outside_dependencies_are_part_of_the_hash(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    before = _digest(tree, _packages(tree))
    (tree / "go.work").write_text((tree / "go.work").read_text() + "\n")
    assert _digest(tree, _packages(tree)) != before
    again = _digest(tree, _packages(tree))
    packages = _packages(tree)
    packages[2]["Module"]["Version"] = "v1.2.4"
    assert _digest(tree, packages) != again


def test_a_package_outside_the_tree_without_a_version_is_hashed_by_content(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    local = write(tmp_path / "elsewhere/lib.go", "package lib\n")
    outside = {"Dir": str(local.parent), "Module": {"Path": "example.com/lib"}, "GoFiles": ["lib.go"]}
    packages = [*_packages(tree), outside]
    before = _digest(tree, packages)
    local.write_text("package lib // replaced locally\n")
    assert _digest(tree, packages) != before


def test_a_replace_to_a_local_directory_is_hashed_by_content(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    local = write(tmp_path / "fork/y/y.go", "package y\n")
    module = {"Path": "github.com/x/y", "Version": "v1.2.3", "Replace": {"Path": "../fork/y", "Dir": str(local.parent)}}
    packages = [*_packages(tree)[:2], {"Dir": str(local.parent), "Module": module, "GoFiles": ["y.go"]}]
    before = _digest(tree, packages)
    local.write_text("package y // patched\n")
    assert _digest(tree, packages) != before


def test_cache_entries_are_named_by_version_and_inputs_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    entry = source_build.source_entry_dir(V, "8d61908362d64ff2a799ea147cd55170676800df2818516dd90809ec60f21a30")
    assert entry == tmp_path / "kubernetes" / "v1.37.1-src-8d61908362d64ff2"
    assert entry.parent == binaries.entry_dir(V).parent  # beside the release entries


@needs_go
def test_go_list_finds_what_each_command_reads(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    before = source_build.tree_inputs(tree, V, binaries.COMPONENTS)
    assert before.files == 10  # 4 main.go, manager.go, util.go, the two staging go.mod, go.mod, go.work
    (tree / "pkg/unused/unused.go").write_text("package unused // edited\n")
    (tree / "README.md").write_text("edited\n")
    assert source_build.tree_inputs(tree, V, binaries.COMPONENTS).digest == before.digest
    (tree / "pkg/kubelet/cm/devicemanager/manager.go").write_text('package devicemanager\n\nconst Checkpoint = "x"\n')
    assert source_build.tree_inputs(tree, V, binaries.COMPONENTS).digest != before.digest
    assert source_build.tree_inputs(tree, KubeVersion(1, 37, 2), binaries.COMPONENTS).digest != before.digest


@needs_go
def test_a_tree_go_cannot_load_names_the_failure(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    (tree / "cmd/kubelet/main.go").write_text('package main\n\nimport _ "k8s.io/kubernetes/pkg/missing"\n')
    with pytest.raises(BadInput) as excinfo:
        source_build.tree_inputs(tree, V, binaries.COMPONENTS)
    assert "go list" in excinfo.value.problem and "pkg/missing" in excinfo.value.problem


@needs_go
def test_ensure_builds_only_when_the_inputs_change_and_finds_a_reverted_build(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path / "cache"))
    tree = source_tree(tmp_path / "k8s")
    built = []

    def build(tree, version, target, components, progress):
        built.append(version)
        for name in components:
            (target / name).write_text(f"{name} {version} {len(built)}")
        return 1.0

    monkeypatch.setattr(source_build, "build_tree", build)
    quiet = dict(progress=lambda _: None)
    first = binaries.ensure_binaries(V, source_tree=tree, **quiet)
    assert first.source == f"go build of {tree}" and first.directory.name.startswith("v1.37.1-src-")
    assert (first.directory / "SOURCE.json").is_file() and first.path("kubelet").read_text() == "kubelet 1.37.1 1"
    assert binaries.ensure_binaries(V, source_tree=tree, **quiet).source == "cache" and len(built) == 1
    manager = tree / "pkg/kubelet/cm/devicemanager/manager.go"
    original = manager.read_text()
    manager.write_text(original.replace('"on"', '"off"'))
    broken = binaries.ensure_binaries(V, source_tree=tree, **quiet)
    assert broken.directory != first.directory and len(built) == 2
    manager.write_text(original)
    again = binaries.ensure_binaries(V, source_tree=tree, components=binaries.KUBELET_ONLY, **quiet)
    assert (again.directory, again.source, len(built)) == (first.directory, "cache", 2)


def test_old_source_entries_are_pruned_by_last_use(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    root = tmp_path / "kubernetes"
    entries = []
    for index in range(7):
        entry = root / f"v1.37.1-src-{index:016x}"
        entry.mkdir(parents=True)
        os.utime(entry, (1000 + index, 1000 + index))
        entries.append(entry)
    (root / "v1.37.1").mkdir()  # a release entry is never pruned
    removed = source_build.prune_source_entries(keep=entries[0], count=4)
    assert removed == [entries[2], entries[1]]
    assert sorted(p.name for p in root.iterdir()) == sorted(["v1.37.1", *(e.name for e in entries if e not in removed)])


def test_binary_source_names_the_tree_without_hashing(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    text = binaries.binary_source(V, source_tree=tmp_path / "k8s")
    assert text.startswith(f"K8S_SOURCE {tmp_path / 'k8s'}: go build at session start unless")
    assert "kubernetes/v1.37.1-src-<inputs hash>" in text


def test_bin_dir_and_source_tree_together_are_refused(tmp_path):
    with pytest.raises(BadInput):
        binaries.ensure_binaries(V, user_dir=tmp_path, source_tree=tmp_path)
