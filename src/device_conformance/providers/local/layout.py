"""Where everything of one local cluster lives: one run directory per cluster."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from device_conformance.providers.base import state_root

# Paths the kubelet and containerd use that cannot be moved by configuration (the device plugin
# directory is compiled into the kubelet as /var/lib/kubelet/device-plugins). Inside the node's
# private mount namespace each is bind-mounted from the run directory, so clusters never share them
# and every mount disappears with the namespace.
NODE_PRIVATE_PATHS = {
    "/var/lib/kubelet": "kubelet",
    "/var/log/pods": "pod-logs",
    "/var/log/containers": "container-logs",
    "/var/lib/cni": "cni-state",
    "/run/netns": "netns",
    "/run/containerd": "containerd-run",
    "/var/run/cdi": "cdi",
}


@dataclass(frozen=True)
class RunLayout:
    root: Path

    @classmethod
    def for_run(cls, run_id: str) -> RunLayout:
        return cls(state_root() / "runs" / run_id)

    @property
    def run_id(self) -> str:
        return self.root.name

    @property
    def state_file(self) -> Path:
        return self.root / "state.json"

    @property
    def pki(self) -> Path:
        return self.root / "pki"

    @property
    def kubeconfig(self) -> Path:
        return self.root / "kubeconfig"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, component: str) -> Path:
        return self.logs / f"{component}.log"

    @property
    def audit_log(self) -> Path:
        """The API server's audit log (configs.audit_policy: the audited controllers' pod requests)."""
        return self.logs / "kube-apiserver-audit.log"

    @property
    def etcd_data(self) -> Path:
        return self.root / "etcd"

    @property
    def containerd(self) -> Path:
        return self.root / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd / "containerd.sock"

    @property
    def cni_conf_dir(self) -> Path:
        return self.root / "cni-conf"

    @property
    def config_dir(self) -> Path:
        return self.root / "config"

    def private(self, node_path: str) -> Path:
        """The run-directory source of a node path bind-mounted in the node's mount namespace."""
        return self.root / "node" / NODE_PRIVATE_PATHS[node_path]

    @property
    def kubelet_root(self) -> Path:
        """The kubelet's /var/lib/kubelet as seen from the host (fakes put their sockets here)."""
        return self.private("/var/lib/kubelet")

    @property
    def cdi_dir(self) -> Path:
        return self.private("/var/run/cdi")
