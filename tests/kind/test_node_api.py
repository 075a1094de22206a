"""DockerNode offers LocalNode's API (and the NodeControl protocol) with the same signatures."""

from __future__ import annotations

import inspect

from device_conformance.node.base import NodeControl
from device_conformance.node.docker import DockerNode
from device_conformance.node.local import LocalNode


def _public(cls):
    return {name: member for name, member in vars(cls).items() if callable(member) and not name.startswith("_")}


def test_docker_node_has_every_local_node_method_with_its_signature():
    docker_methods = _public(DockerNode)
    for name, method in _public(LocalNode).items():
        assert name in docker_methods, f"DockerNode lacks {name}"
        local = [p.name for p in inspect.signature(method).parameters.values()]
        docker = [p.name for p in inspect.signature(docker_methods[name]).parameters.values()]
        assert docker[: len(local)] == local, name


def test_docker_node_implements_the_protocol():
    for name in _public(NodeControl):
        assert callable(getattr(DockerNode, name, None)), name
