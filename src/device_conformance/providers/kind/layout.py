"""Where one kind cluster's host-side state lives: per-node directories bound into the nodes, state file.

<kind root>/<cluster>/state.json
<kind root>/<cluster>/n<index>/{device-plugins,plugins_registry,plugins,pod-resources,cdi}
<kind root>/<cluster>/kubeconfig
<kind root>/<cluster>/shared (the same path in every node)
<kind root>/<cluster>/certs.d (the nodes' /etc/containerd/certs.d)
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from device_conformance.providers.base import state_root

# Node directory -> host directory name. The kubelet hard-codes the first three (device-plugins,
# plugins_registry, plugins); pod-resources lets host-side clients reach the podresources API; the
# DRA fakes write CDI specs into /var/run/cdi, which containerd reads. Directories, never socket
# files: the kubelet recreates kubelet.sock on every start (new inode; a file mount goes stale).
NODE_MOUNTS = {
    "/var/lib/kubelet/device-plugins": "device-plugins",
    "/var/lib/kubelet/plugins_registry": "plugins_registry",
    "/var/lib/kubelet/plugins": "plugins",
    "/var/lib/kubelet/pod-resources": "pod-resources",
    "/var/run/cdi": "cdi",
}


def kind_root() -> Path:
    """Short on purpose: fake plugin sockets inside must stay under sun_path's 107 bytes."""
    explicit = os.environ.get("DEVICE_CONFORMANCE_KIND_STATE")
    if explicit:
        return Path(explicit)
    if os.geteuid() == 0:
        return state_root() / "kind"
    return Path(tempfile.gettempdir()) / f"dc-kind-{os.getuid()}"


@dataclass(frozen=True)
class KindLayout:
    root: Path

    @classmethod
    def for_cluster(cls, cluster: str) -> KindLayout:
        return cls(kind_root() / cluster)

    @property
    def cluster(self) -> str:
        return self.root.name

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def config_file(self) -> Path:
        return self.root / "kind-config.yaml"

    @property
    def shared_dir(self) -> Path:
        """Bound into every node at this same path: what a test writes here, the node's kubelet reads here."""
        return self.root / "shared"

    @property
    def registry_dir(self) -> Path:
        """The nodes' /etc/containerd/certs.d (read-only): our image names' registry refuses at once."""
        return self.root / "certs.d"

    def node_dir(self, index: int) -> Path:
        """The index-th node of the config; `n0`, not its name: fake plugins' socket paths must stay short."""
        return self.root / f"n{index}"

    def node_mounts(self, index: int) -> dict[str, Path]:
        """Node path -> host directory for the index-th node of the config."""
        return {node: self.node_dir(index) / name for node, name in NODE_MOUNTS.items()}


def node_suffixes(roles: list[str]) -> list[str]:
    """kind's node names after `<cluster>-`, in config order (pkg/cluster/internal/providers/common/namer.go)."""
    counts: dict[str, int] = {}
    suffixes = []
    for role in roles:
        counts[role] = counts.get(role, 0) + 1
        suffixes.append(role if counts[role] == 1 else f"{role}{counts[role]}")
    return suffixes
