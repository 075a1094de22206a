"""Every provider's node is one NodeControl over its own NodeTransport: the transports satisfy the protocol
with its signatures, and no node class re-implements what NodeControl and KubeletControl do once."""

from __future__ import annotations

import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest

from device_conformance.host.dockercli import Docker
from device_conformance.node.base import NodeControl
from device_conformance.node.kubelet import KubeletControl
from device_conformance.node.transport import KubeletService, NodeTransport
from device_conformance.providers.kind.node import KindKubelet, KindNode, KindTransport
from device_conformance.providers.local.node import LocalKubelet, LocalNode, LocalTransport


def _members(protocol: type) -> dict[str, object]:
    names = {*vars(protocol), *getattr(protocol, "__annotations__", {})}
    return {name: getattr(protocol, name, None) for name in names if not name.startswith("_")}


def _same_signature(cls: type, protocol: type) -> None:
    for name, member in _members(protocol).items():
        if not callable(member):
            continue
        implemented = getattr(cls, name, None)
        assert callable(implemented), f"{cls.__name__} lacks {name}()"
        expected = [(p.name, p.kind, p.default) for p in inspect.signature(member).parameters.values()]
        actual = [(p.name, p.kind, p.default) for p in inspect.signature(implemented).parameters.values()]
        assert actual == expected, f"{cls.__name__}.{name}{inspect.signature(implemented)}"


def _local_cluster(tmp_path: Path) -> SimpleNamespace:
    """What LocalTransport reads from a LocalCluster when it is made (no cluster is brought up)."""
    return SimpleNamespace(
        state=SimpleNamespace(node_name="dc-r000000"),
        layout=SimpleNamespace(private=lambda node_path: tmp_path / node_path.strip("/").replace("/", "-")),
    )


@pytest.fixture
def transports(tmp_path) -> list:
    return [
        LocalTransport(_local_cluster(tmp_path)),
        KindTransport(Docker(), "dc-x-control-plane", {"/var/lib/kubelet/device-plugins": tmp_path / "dp"}),
    ]


@pytest.mark.parametrize(("transport", "service"), [(LocalTransport, LocalKubelet), (KindTransport, KindKubelet)])
def test_each_provider_implements_the_protocols_with_their_signatures(transport, service):
    _same_signature(transport, NodeTransport)
    _same_signature(service, KubeletService)


def test_transports_and_their_kubelet_services_are_the_protocols(transports):
    for transport in transports:
        assert isinstance(transport, NodeTransport), type(transport).__name__
        assert isinstance(transport.kubelet_service, KubeletService), type(transport.kubelet_service).__name__


def test_nodes_share_the_one_node_and_kubelet_layer(tmp_path):
    shared = {name for name in vars(NodeControl) if not name.startswith("_")}
    for node_class in (LocalNode, KindNode):
        assert issubclass(node_class, NodeControl)
        overridden = shared & set(vars(node_class))
        assert not overridden, f"{node_class.__name__} re-implements {sorted(overridden)}"
    kind_only = {name for name in vars(KindNode) if not name.startswith("_")} - {"transport"}
    assert kind_only == {"exec", "reboot", "describe"}
    node = LocalNode(_local_cluster(tmp_path))
    assert type(node.kubelet) is KubeletControl
    assert node.kubelet.service is node.transport.kubelet_service


def test_the_local_node_reaches_every_node_private_path_on_the_host(tmp_path):
    node = LocalNode(_local_cluster(tmp_path))
    assert (
        node.host_path("/var/lib/kubelet/device-plugins/x.sock") == tmp_path / "var-lib-kubelet/device-plugins/x.sock"
    )
    assert node.host_path("/var/run/cdi") == tmp_path / "var-run-cdi"
