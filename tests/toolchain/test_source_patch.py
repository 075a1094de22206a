"""A K8S_SOURCE tree is judged as "release + patch": unless it is exactly a release (a clean checkout at its
tag), a known bug of its release is expected without strictness, since the patch may fix it.

The rule (toolchain/source_tree.patch_of, expectations/behaviour.expected_failure), a real git checkout's
states, and the pytest side: a known bug's test passing on a patched tree is XPASS naming the patch, not the
strict failure that asks for the bug data to change (pytester runs, no cluster)."""

import shutil
import subprocess

import pytest
from declared_runs import AFFECTED, ROLLOUT_BUG
from fake_k8s_tree import source_tree

from device_conformance.expectations.behaviour import CONTROLLER_MANAGER, KUBELET, ClusterVersions, expected_failure
from device_conformance.expectations.deviceplugin import PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE as BUG
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import source_tree as trees

pytest_plugins = ["pytester"]
V = KubeVersion.parse


@pytest.mark.parametrize(
    ("text", "state", "patch"),
    [
        ("v1.37.1", "clean", ""),  # exactly the release
        ("v1.37.1-3-g0123456789abcd", "clean", "v1.37.1-3-g0123456789abcd is past the tag v1.37.1"),  # git describe
        ("v1.37.1-3+0123456789abcd", "clean", "v1.37.1-3+0123456789abcd is past the tag v1.37.1"),  # hack/lib
        ("v1.37.1-dirty", "dirty", "v1.37.1-dirty is past the tag v1.37.1"),
        ("v1.37.1", "dirty", "v1.37.1 with uncommitted changes"),
        ("v1.37.1", "archive", "v1.37.1 from a module zip, with no git history to tell an edit apart"),
        ("v1.37.1", "", "v1.37.1 in tree state unknown"),
        ("v1.39.0-alpha.0-12-g0123456789abcd", "clean", "v1.39.0-alpha.0-12-g0123456789abcd is past the tag"),
    ],
)
def test_only_a_clean_tree_at_its_tag_is_exactly_the_release(text, state, patch):
    version = KubeVersion.from_reported(text)
    assert trees.patch_of(version, text, state).startswith(patch) and bool(patch) == bool(
        trees.patch_of(version, text, state)
    )


def test_a_version_file_says_the_tree_state(tmp_path):
    tree = source_tree(tmp_path / "got")
    trees.write_version_file(tree, V("1.37.1"))  # what `k8s-source get` writes: 'archive'
    found = trees.tree_version(tree)
    assert (found.version, found.patch) == (
        V("1.37.1"),
        "v1.37.1 from a module zip, with no git history to tell an edit apart",
    )
    (tree / ".kube-version-defs").write_text("KUBE_GIT_TREE_STATE='clean'\nKUBE_GIT_VERSION='v1.37.1'\n")
    assert trees.tree_version(tree).patch == ""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_git_checkout_is_patched_past_its_tag_or_with_uncommitted_changes(tmp_path):
    tree = source_tree(tmp_path / "k8s")
    git = ["git", "-C", str(tree), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    subprocess.run([*git, "tag", "v1.37.1"], check=True)
    assert trees.tree_version(tree).patch == ""  # a clean checkout of the tag: the release itself
    manager = tree / "pkg/kubelet/cm/devicemanager/manager.go"
    manager.write_text(manager.read_text() + "// the fix\n")
    found = trees.tree_version(tree)
    assert (found.version, found.patch) == (V("1.37.1"), "v1.37.1 with uncommitted changes")
    subprocess.run([*git, "commit", "-qam", "the fix"], check=True)
    found = trees.tree_version(tree)
    assert (
        found.version == V("1.37.1") and found.patch.startswith("v1.37.1-1-g") and "past the tag v1.37.1" in found.patch
    )


def test_a_known_bug_on_a_patched_component_is_expected_but_not_strictly():
    release = ClusterVersions(V("1.35.4"), V("1.35.4"))
    assert expected_failure(BUG, release).strict
    patched = ClusterVersions(V("1.35.4"), V("1.35.4"), "v1.35.4-2-gabc is past the tag v1.35.4", frozenset({KUBELET}))
    expected = expected_failure(BUG, patched)
    assert not expected.strict
    assert expected.reason.startswith(
        "patched tree: the known bug kubernetes#127803 may be fixed by the patch (v1.35.4-2-gabc is past the tag "
        "v1.35.4); known upstream bug kubernetes#127803 on Kubernetes 1.35.4"
    )
    # a kubelet of another release (KUBELET_VERSION) under a patched control plane is no patched kubelet
    control_plane_only = ClusterVersions(V("1.35.4"), V("1.35.4"), "dirty", frozenset({CONTROLLER_MANAGER}))
    assert expected_failure(BUG, control_plane_only).strict
    assert expected_failure(BUG, ClusterVersions(V("1.37.1"), V("1.37.1"), "dirty", frozenset({KUBELET}))) is None


def run_on_tree(pytester, monkeypatch, tmp_path, source):
    """`source` with the kubelet at AFFECTED and K8S_SOURCE a tree from `k8s-source get` (release + patch)."""
    tree = source_tree(tmp_path / "k8s")
    trees.write_version_file(tree, V(AFFECTED))
    monkeypatch.setenv("K8S_SOURCE", str(tree))
    monkeypatch.delenv("K8S_VERSION", raising=False)
    monkeypatch.delenv("KUBELET_VERSION", raising=False)
    pytester.makeconftest(
        f"""
import pytest
from device_conformance.expectations.versions import KubeVersion

@pytest.fixture(scope="session")
def kube_version():
    return KubeVersion.parse({AFFECTED!r})

@pytest.fixture(scope="session")
def control_plane_version(kube_version):
    return kube_version
"""
    )
    pytester.makepyfile(test_declared=source)
    return pytester.runpytest("--strict-markers", "-p", "no:cacheprovider", "-rsxX")


def test_a_known_bug_test_passing_on_a_patched_tree_is_xpass_naming_the_patch(pytester, monkeypatch, tmp_path):
    source = f"""
import pytest
{ROLLOUT_BUG}
@pytest.mark.known_bug(BUG)
def test_x():
    pass
"""
    result = run_on_tree(pytester, monkeypatch, tmp_path, source)
    result.assert_outcomes(xpassed=1)
    result.stdout.fnmatch_lines(["*XPASS*patched tree: the known bug kubernetes#127803 may be fixed by the patch*"])


def test_a_known_bug_block_passing_on_a_patched_tree_is_xpass_and_failing_is_still_xfail(
    pytester, monkeypatch, tmp_path
):
    source = f"""
import pytest
{ROLLOUT_BUG}
@pytest.mark.known_bug(BUG)
def test_fixed_by_the_patch(shows_known_bug):
    with shows_known_bug(BUG):
        pass

@pytest.mark.known_bug(BUG)
def test_not_fixed_by_the_patch(shows_known_bug):
    with shows_known_bug(BUG):
        assert False, "allocatable 0"
"""
    result = run_on_tree(pytester, monkeypatch, tmp_path, source)
    result.assert_outcomes(xpassed=1, xfailed=1)
    result.stdout.fnmatch_lines(
        ["*XPASS*test_fixed_by_the_patch*patched tree: the known bug kubernetes#127803*its check passed*"]
    )
