"""The existing provider tests the version the cluster runs, read from it, never a default."""

from types import SimpleNamespace

import pytest

from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.expectations.versions import KubeVersion
from device_conformance.kube import versions
from device_conformance.providers import existing


def _node(name, kubelet, runtime="containerd://2.3.4"):
    info = SimpleNamespace(kubelet_version=kubelet, container_runtime_version=runtime)
    return SimpleNamespace(metadata=SimpleNamespace(name=name), status=SimpleNamespace(node_info=info))


class StubKube:
    def __init__(self, nodes, server="v1.35.3"):
        self.core = SimpleNamespace(list_node=lambda **_: SimpleNamespace(items=nodes))
        self.version = SimpleNamespace(get_code=lambda **_: SimpleNamespace(git_version=server))
        self.closed = False

    def close(self):
        self.closed = True


def test_the_handle_carries_the_nodes_kubelet_and_the_api_servers_version(monkeypatch, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    stub = StubKube([_node("a", "v1.35.2-eks.1"), _node("b", "v1.35.2")])
    monkeypatch.setattr(existing.Kube, "from_kubeconfig", lambda path: stub)
    handle = existing.ExistingProvider(kubeconfig).up()
    assert handle.k8s_version == KubeVersion(1, 35, 2) and handle.control_plane_version == KubeVersion(1, 35, 3)
    assert "read from the cluster" in handle.version_source and stub.closed
    assert handle.describe_versions().startswith("kubelet v1.35.2, control plane v1.35.3 (read from the cluster")


def test_nodes_of_different_kubelet_versions_are_refused():
    read = versions.read_versions(StubKube([_node("a", "v1.35.2"), _node("b", "v1.34.9")]))
    with pytest.raises(BadInput) as excinfo:
        _ = read.kubelet
    assert "a: v1.35.2, b: v1.34.9" in excinfo.value.problem


def test_a_cluster_without_nodes_is_refused():
    with pytest.raises(BadInput, match="no nodes"):
        _ = versions.read_versions(StubKube([])).kubelet


def test_an_unreachable_cluster_is_a_conformance_error_naming_the_kubeconfig(monkeypatch, tmp_path):
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")

    def refuse(path):
        raise OSError("connection refused")

    monkeypatch.setattr(existing.Kube, "from_kubeconfig", refuse)
    with pytest.raises(ConformanceError, match=f"behind {kubeconfig}: OSError: connection refused"):
        existing.ExistingProvider(kubeconfig).up()
