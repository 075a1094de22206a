"""What a provider gives the suites: a cluster handle with its kubeconfig and its nodes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from device_conformance.node.base import NodeControl


@dataclass
class ClusterHandle:
    name: str
    provider: str
    kubeconfig: Path
    k8s_version: str
    # The nodes the harness reaches (NodeControl over the provider's NodeTransport); empty: no node access.
    nodes: list[NodeControl] = field(default_factory=list)
    # Copies the cluster's component logs into a directory (for failure reports).
    collect_logs: Callable[[Path], None] = lambda _: None


class Provider(Protocol):
    name: str

    def up(self) -> ClusterHandle: ...

    def down(self) -> None: ...

    def keep(self) -> str:
        """Leave the cluster running; returns how the user reaches and later deletes it."""
        ...
