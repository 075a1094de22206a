"""K8S_SOURCE / --k8s-source in settings.resolve(): the tree, the version under test, and conflicts."""

import shutil
import subprocess

import pytest
from fake_k8s_tree import source_tree

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.settings import Source, resolve
from device_conformance.toolchain import source_tree as trees


def test_the_tree_says_its_version_and_the_source_says_how(tmp_path):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    settings = resolve({}, {"K8S_SOURCE": str(tree)})
    assert settings.k8s_source.value == tree and settings.k8s_source.source == Source("environment", "K8S_SOURCE")
    assert settings.k8s_version.value == KubeVersion(1, 37, 1)
    assert str(settings.k8s_version.source) == f"default: from the tree: {tree / '.kube-version-defs'} says v1.37.1"
    assert settings.kind_image.value == "kindest/node:v1.37.1"


def test_an_explicit_version_may_repeat_the_trees_but_not_contradict_it(tmp_path):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    same = resolve({"k8s_source": str(tree)}, {"K8S_VERSION": "1.37.1"})
    assert same.k8s_version.source == Source("environment", "K8S_VERSION")
    assert same.k8s_source.source == Source("option", "--k8s-source")
    with pytest.raises(BadInput) as excinfo:
        resolve({"k8s_source": str(tree), "k8s_version": "1.36.4"}, {})
    assert excinfo.value.problem.startswith("--k8s-version '1.36.4' contradicts K8S_SOURCE:")
    assert "says v1.37.1" in excinfo.value.problem and "K8S_VERSION=1.37.1" in excinfo.value.fix


def test_a_tree_that_says_no_version_needs_k8s_version(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    with pytest.raises(BadInput) as excinfo:
        resolve({}, {"K8S_SOURCE": str(tree)})
    assert "does not say which Kubernetes release it is" in excinfo.value.problem
    assert "K8S_VERSION=MAJOR.MINOR.PATCH" in excinfo.value.fix
    given = resolve({}, {"K8S_SOURCE": str(tree), "K8S_VERSION": "1.38.0"})
    assert given.k8s_version.value == KubeVersion(1, 38, 0)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_checkout_is_described_as_hack_lib_version_sh_does(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    subprocess.run([*git, "tag", "v1.38.0-alpha.0"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "next"], check=True)
    found = trees.tree_version(tree)
    # a build past the alpha.0 tag counts as that tag: below 1.38.0-alpha.1 and 1.38.0
    assert found is not None and found.version == KubeVersion(1, 38, 0, "alpha.0")
    assert found.how.startswith(f"git describe in {tree} says v1.38.0-alpha.0-1-g")


def test_k8s_source_and_k8s_bin_dir_together_are_refused_naming_the_fix(tmp_path):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    with pytest.raises(BadInput) as excinfo:
        resolve({"k8s_source": str(tree)}, {"K8S_BIN_DIR": "/opt/bin"})
    assert excinfo.value.problem == (
        f"--k8s-source '{tree}' and K8S_BIN_DIR='/opt/bin' (environment) both say where the Kubernetes binaries "
        "come from"
    )
    assert "K8S_SOURCE to build them from the tree, or K8S_BIN_DIR" in excinfo.value.fix


def test_a_missing_tree_is_refused_with_the_recipe(tmp_path):
    with pytest.raises(BadInput) as excinfo:
        resolve({}, {"K8S_SOURCE": str(tmp_path / "nope")})
    assert excinfo.value.problem == f"K8S_SOURCE='{tmp_path / 'nope'}' (environment) is not a directory"
    assert "k8s-source get VERSION DIR" in excinfo.value.fix and "unset K8S_SOURCE" in excinfo.value.fix


@pytest.mark.parametrize("provider", ["kind", "existing"])
def test_only_the_local_provider_builds_from_a_tree(tmp_path, provider):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    with pytest.raises(BadInput) as excinfo:
        resolve({"provider": provider, "kubeconfig": str(kubeconfig)}, {"K8S_SOURCE": str(tree)})
    assert f"but the provider is {provider}" in excinfo.value.problem and "--provider local" in excinfo.value.fix


def test_a_relative_tree_is_made_absolute(tmp_path, monkeypatch):
    source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    monkeypatch.chdir(tmp_path)
    assert resolve({"k8s_source": "k8s"}, {}).k8s_source.value == tmp_path / "k8s"


def test_check_tree_names_what_is_missing(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    trees.check_tree(tree)
    shutil.rmtree(tree / "staging/src/k8s.io/kubelet")
    with pytest.raises(BadInput) as excinfo:
        trees.check_tree(tree)
    assert "lacks 1 staging modules" in excinfo.value.problem and "staging/src/k8s.io/kubelet" in excinfo.value.problem
    assert "k8s-source get" in excinfo.value.fix
    with pytest.raises(BadInput) as excinfo:
        trees.check_tree(tmp_path)
    assert "not a Kubernetes source tree" in excinfo.value.problem


def test_the_version_file_is_what_hack_lib_version_sh_sources(tmp_path):
    trees.write_version_file(tmp_path, KubeVersion(1, 37, 1))
    text = (tmp_path / ".kube-version-defs").read_text()
    assert "KUBE_GIT_VERSION='v1.37.1'\n" in text and "KUBE_GIT_MINOR='37'\n" in text
    found = trees.tree_version(tmp_path)
    assert found is not None and found.version == KubeVersion(1, 37, 1)
