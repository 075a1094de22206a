"""Node control: the one API every provider implements (local processes now; kind and existing later)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Protocol

from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.cri import Sandbox

KUBELET_ROOT = Path("/var/lib/kubelet")


class NodeControl(Protocol):
    """Faults and file access on one node. Paths given to methods are as the kubelet sees them."""

    name: str

    def host_path(self, node_path: str | Path) -> Path:
        """Where a path of the node (e.g. /var/lib/kubelet/device-plugins) is on the test host."""
        ...

    # -- kubelet lifecycle -----------------------------------------------------------------
    def restart_kubelet(self) -> None:
        """Graceful restart (SIGTERM, wait for exit, start) and wait for healthz."""
        ...

    def stop_kubelet(self) -> None:
        """SIGTERM and wait until the process is gone and healthz no longer answers."""
        ...

    def start_kubelet(self, binary: Path | None = None, version: KubeVersion | None = None) -> None:
        """Start (optionally another version's binary) and wait for healthz."""
        ...

    def crash_kubelet(self) -> None:
        """SIGKILL the kubelet; its supervisor brings it back like systemd's Restart=always."""
        ...

    def signal_kubelet(self, sig: signal.Signals) -> None:
        """Send a signal (SIGSTOP / SIGCONT to freeze and thaw it)."""
        ...

    def kubelet_healthy(self) -> bool: ...

    def wait_kubelet_healthy(self, timeout: float = 120) -> None: ...

    def kubelet_pid(self) -> int: ...

    # -- files under the kubelet root ------------------------------------------------------
    def read_file(self, node_path: str | Path) -> bytes: ...

    def write_file(self, node_path: str | Path, data: bytes, mode: int = 0o600) -> None: ...

    def delete_file(self, node_path: str | Path) -> None: ...

    def list_sockets(self, node_dir: str | Path) -> list[str]: ...

    # -- logs --------------------------------------------------------------------------------
    def kubelet_log_mark(self) -> int:
        """A position in the kubelet log; pass it to kubelet_log_since()."""
        ...

    def kubelet_log_since(self, mark: int) -> str: ...

    # -- container runtime -------------------------------------------------------------------
    def pod_sandboxes(self) -> list[Sandbox]:
        """The container runtime's pod sandboxes (CRI ListPodSandbox), ready or not."""
        ...

    def runtime_info(self) -> dict:
        """The container runtime's verbose CRI Status info (containerd: {"config": {...}, ...})."""
        ...

    # -- whole-node faults -------------------------------------------------------------------
    def simulate_reboot(self) -> int:
        """Upstream's reboot: stop the kubelet, remove every pod sandbox through CRI, start it.

        Returns the number of sandboxes removed."""
        ...
