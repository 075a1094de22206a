"""--k8s-source reaches the binaries: `setup`, `cluster up`, `k8s-source build` and the pytest session's provider."""

from fake_k8s_tree import source_tree

from device_conformance.cli import k8s_source
from device_conformance.cli.main import main
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers import make_provider
from device_conformance.providers.local import provider as local_provider
from device_conformance.providers.local import setup as local_setup
from device_conformance.settings import resolve
from device_conformance.toolchain.cache import BinarySet

V = KubeVersion(1, 37, 1)


def _record(monkeypatch, module):
    asked = []

    def ensure(version, *, user_dir=None, source_tree=None, components=None, progress=print):
        asked.append((version, user_dir, source_tree))
        return BinarySet(version, source_tree, "cache")

    monkeypatch.setattr(module, "ensure_binaries", ensure)
    return asked


def test_setup_builds_from_the_tree(tmp_path, monkeypatch):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    asked = _record(monkeypatch, local_setup)
    monkeypatch.setattr(local_setup, "ensure_upgrade_kubelet", lambda settings: None)
    monkeypatch.setattr(local_setup, "ensure_containerd", lambda *a, **k: BinarySet("v2.3.4", tmp_path, "cache"))
    monkeypatch.setattr(local_setup, "build_images", lambda directory: [])
    assert main(["setup", "--no-packages", "--provider", "local", "--k8s-source", str(tree)]) == 0
    assert asked == [(V, None, tree)]


def test_cluster_up_passes_the_tree_to_the_local_provider(tmp_path, monkeypatch):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    made = []

    class Provider:
        def __init__(self, version, **options):
            made.append((version, options["source_tree"], options["bin_dir"]))

        def up(self):
            pass

        def keep(self):
            return "kept"

    monkeypatch.setattr(local_provider, "LocalProvider", Provider)
    assert main(["cluster", "up", "--k8s-source", str(tree)]) == 0
    assert made == [(V, tree, None)]


def test_k8s_source_build_takes_the_tree_from_the_environment(tmp_path, monkeypatch, capsys):
    tree = source_tree(tmp_path / "k8s")
    asked = _record(monkeypatch, k8s_source)
    monkeypatch.setenv("K8S_SOURCE", str(tree))
    monkeypatch.delenv("K8S_VERSION", raising=False)
    assert main(["k8s-source", "build"]) == 2  # the tree says no version
    assert "K8S_VERSION=MAJOR.MINOR.PATCH" in capsys.readouterr().err
    assert main(["k8s-source", "build", "--k8s-version", "1.37.1"]) == 0
    assert asked == [(V, None, tree)]


def test_the_sessions_local_provider_gets_the_tree(tmp_path):
    tree = source_tree(tmp_path / "k8s", version_defs="v1.37.1")
    provider = make_provider(resolve({"k8s_source": str(tree)}, {}), log=lambda _: None)
    assert provider.source_tree == tree and provider.bin_dir is None and provider.version == V
