"""The kind cluster's shared directory: reported only when every node binds it at the same path."""

from __future__ import annotations

from pathlib import Path

from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.kind.layout import KindLayout
from device_conformance.providers.kind.provider import KindProvider


class FakeCLI:
    def __init__(self, mounts: dict[str, dict[str, Path]]) -> None:
        self.mounts = mounts

    def nodes(self, name: str) -> list[str]:
        return list(self.mounts)

    def node_mounts(self, container: str) -> dict[str, Path]:
        return self.mounts[container]


def test_shared_dir_needs_the_same_path_in_every_node(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_KIND_STATE", str(tmp_path))
    shared = KindLayout.for_cluster("dc-x").shared_dir
    provider = KindProvider(KubeVersion(1, 37, 1), log=lambda _: None)
    both = {"dc-x-control-plane": {str(shared): shared}, "dc-x-worker": {str(shared): shared}}
    provider.cli = FakeCLI(both)  # type: ignore[assignment]
    assert provider._shared_dir("dc-x") == shared
    # A worker without it (a cluster made by another config), or with it elsewhere: none.
    provider.cli = FakeCLI({**both, "dc-x-worker": {}})  # type: ignore[assignment]
    assert provider._shared_dir("dc-x") is None
    provider.cli = FakeCLI({**both, "dc-x-worker": {str(shared): tmp_path / "other"}})  # type: ignore[assignment]
    assert provider._shared_dir("dc-x") is None
