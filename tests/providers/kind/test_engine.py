"""Which node image a kind session runs, and when our build is loaded (engine.ensure_node_image), without Docker."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.kind import engine

V = KubeVersion(1, 37, 1)


@dataclass
class FakeDocker:
    images: set[str]
    calls: list[list[str]] = field(default_factory=list)

    def image_present(self, image: str) -> bool:
        return image in self.images

    def run(self, args: list[str], **_: object) -> None:
        self.calls.append(list(args))


@dataclass
class FakeBuilder:
    builds: list[KubeVersion] = field(default_factory=list)

    def default_name(self, version: KubeVersion) -> str:
        return f"device-conformance.local/kind-node:{version.tag}"

    def build_node_image(self, version: KubeVersion, *, progress: object) -> object:
        self.builds.append(version)

        @dataclass
        class Built:
            name: str
            tarball: Path

        return Built(self.default_name(version), Path(f"/cache/kind-node/{version.tag}.tar"))


@pytest.fixture
def builder(monkeypatch) -> FakeBuilder:
    fake = FakeBuilder()
    monkeypatch.setattr(engine, "_builder", lambda: fake)
    return fake


def test_a_present_image_is_used_and_nothing_is_built(builder):
    docker = FakeDocker({"kindest/node:v1.37.1"})
    assert engine.ensure_node_image(docker, V, "kindest/node:v1.37.1", ours=True, log=print) == "kindest/node:v1.37.1"
    assert (builder.builds, docker.calls) == ([], [])


def test_a_missing_image_the_user_chose_is_left_to_preflight(builder):
    docker = FakeDocker(set())
    assert engine.ensure_node_image(docker, V, "registry.example/node:x", ours=False, log=print) == (
        "registry.example/node:x"
    )
    assert (builder.builds, docker.calls) == ([], [])


def test_a_missing_default_image_is_replaced_by_our_build_loaded_from_its_tarball(builder):
    docker = FakeDocker(set())
    used = engine.ensure_node_image(docker, V, "kindest/node:v1.37.1", ours=True, log=print)
    assert used == "device-conformance.local/kind-node:v1.37.1"
    assert builder.builds == [V]
    assert docker.calls == [["load", "-i", "/cache/kind-node/v1.37.1.tar"]]


def test_our_build_already_in_the_engine_is_not_loaded_again(builder):
    docker = FakeDocker({"device-conformance.local/kind-node:v1.37.1"})
    used = engine.ensure_node_image(docker, V, "kindest/node:v1.37.1", ours=True, log=print)
    assert used == "device-conformance.local/kind-node:v1.37.1"
    assert (builder.builds, docker.calls) == ([], [])


def test_without_the_builder_the_error_says_how_to_get_an_image(monkeypatch):
    monkeypatch.setattr(engine, "NODE_IMAGE_BUILDER", "device_conformance.toolchain.no_such_nodeimage.assemble")
    with pytest.raises(BadInput) as caught:
        engine.ensure_node_image(FakeDocker(set()), V, "kindest/node:v1.37.1", ours=True, log=print)
    assert "cannot build a kind node image (toolchain/nodeimage/" in caught.value.problem
    assert "docker load -i node-image.tar" in caught.value.fix
    assert engine.own_image_name(V) == "device-conformance.local/kind-node:v1.37.1"
