"""What a provider gives the suites: a cluster handle with its kubeconfig and its nodes."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.base import NodeControl
from device_conformance.settings import PROVIDER_CAPABILITIES, ProviderCapabilities


def state_root() -> Path:
    """Every provider's state on this machine; short, because socket paths inside must stay under 107 bytes."""
    return Path(os.environ.get("DEVICE_CONFORMANCE_STATE", "/var/lib/device-conformance"))


@dataclass
class ClusterHandle:
    name: str
    provider: str
    kubeconfig: Path
    # The kubelet version under test: what version-dependent expectations are looked up with.
    k8s_version: KubeVersion
    # The nodes the harness reaches (NodeControl over the provider's NodeTransport); empty: no node access.
    nodes: list[NodeControl] = field(default_factory=list)
    # Copies the cluster's component logs into a directory (for failure reports).
    collect_logs: Callable[[Path], None] = lambda _: None
    # The API server's version where it can differ from the kubelet's (None: the same).
    control_plane_version: KubeVersion | None = None
    # How k8s_version was learnt, for the session log ("the binaries under test", "read from the cluster").
    version_source: str = "the binaries under test"
    # A host directory the nodes see at the same path: for files the kubelet hands to containers
    # (Allocate mounts, device nodes). None where the kubelet runs on the test host (local) or none is shared.
    shared_dir: Path | None = None
    # The API server's audit log of the controllers' pod requests (local provider: configs.audit_policy);
    # None where the provider keeps none.
    audit_log: Path | None = None
    # kube-controller-manager's /metrics as text, read with the suite's admin credentials; None where the
    # provider cannot reach it.
    controller_manager_metrics: Callable[[], str] | None = None

    @property
    def capabilities(self) -> ProviderCapabilities:
        """What its provider can do (settings.PROVIDER_CAPABILITIES)."""
        return PROVIDER_CAPABILITIES[self.provider]

    @property
    def control_plane(self) -> KubeVersion:
        """The API server's release (served API versions, controller behaviour)."""
        return self.control_plane_version or self.k8s_version

    def describe_versions(self) -> str:
        control_plane = self.control_plane
        return f"kubelet {self.k8s_version.tag}, control plane {control_plane.tag} ({self.version_source})"


class Provider(Protocol):
    name: str

    def prepare(self) -> None:
        """Everything that needs no cluster (binaries, images): run at session start, before any test."""
        ...

    def up(self) -> ClusterHandle: ...

    def down(self) -> None: ...

    def keep(self) -> str:
        """Leave the cluster running; returns how the user reaches and later deletes it."""
        ...
