"""Node control for the local provider: the kubelet is our child process, its root a run directory."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from device_conformance.errors import BadInput, ConformanceError
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.cri import CRIClient, Sandbox
from device_conformance.providers.local.cluster import LocalCluster
from device_conformance.providers.local.layout import NODE_PRIVATE_PATHS
from device_conformance.toolchain.binaries import KUBELET_ONLY, ensure_binaries
from device_conformance.wait.core import Pending, until

STOP_TIMEOUT = 60


class LocalNode:
    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.name = cluster.state.node_name

    def host_path(self, node_path: str | Path) -> Path:
        path = Path(node_path)
        for private, _ in sorted(NODE_PRIVATE_PATHS.items(), key=lambda item: -len(item[0])):
            if path == Path(private) or Path(private) in path.parents:
                return self.cluster.layout.private(private) / path.relative_to(private)
        raise BadInput(
            f"{node_path} is not a node-private path of the local provider",
            f"use a path under one of {', '.join(NODE_PRIVATE_PATHS)}",
        )

    # -- kubelet lifecycle -----------------------------------------------------------------
    def kubelet_pid(self) -> int:
        return self.cluster.kubelet().pid

    def kubelet_healthy(self) -> bool:
        return self.cluster.kubelet_healthy()

    def wait_kubelet_healthy(self, timeout: float = 120) -> None:
        self.cluster.wait_kubelet_healthy(timeout)

    def stop_kubelet(self) -> None:
        kubelet = self.cluster.kubelet()
        kubelet.signal(signal.SIGCONT)  # a frozen kubelet cannot act on SIGTERM
        kubelet.stop(grace=STOP_TIMEOUT)
        until(
            lambda: True if not self.kubelet_healthy() else Pending("healthz still answers"),
            what="the kubelet's healthz to stop answering",
            timeout=STOP_TIMEOUT,
        )

    def start_kubelet(self, binary: Path | None = None, version: KubeVersion | None = None) -> None:
        if self.cluster.kubelet().alive():
            raise ConformanceError("start_kubelet: the kubelet is already running; stop it first")
        if version is not None and binary is None:
            binary = ensure_binaries(version, components=KUBELET_ONLY).path("kubelet")
        self.cluster.start_kubelet(binary, version)
        self.wait_kubelet_healthy()

    def restart_kubelet(self) -> None:
        self.stop_kubelet()
        self.start_kubelet(*self._current_binary())

    def crash_kubelet(self) -> None:
        kubelet = self.cluster.kubelet()
        kubelet.signal(signal.SIGKILL)
        until(
            lambda: True if not kubelet.alive() else Pending(f"pid {kubelet.pid} still alive"),
            what="the SIGKILLed kubelet to die",
            timeout=10,
        )
        # We are the kubelet's supervisor; like systemd's Restart=always we start it again.
        self.start_kubelet(*self._current_binary())

    def _current_binary(self) -> tuple[Path, KubeVersion]:
        argv = self.cluster.kubelet().argv
        binary = next(Path(arg) for arg in argv if arg.endswith("/kubelet"))
        return binary, self.cluster.kubelet_version

    def signal_kubelet(self, sig: signal.Signals) -> None:
        self.cluster.kubelet().signal(sig)

    # -- files -------------------------------------------------------------------------------
    def read_file(self, node_path: str | Path) -> bytes:
        return self.host_path(node_path).read_bytes()

    def write_file(self, node_path: str | Path, data: bytes, mode: int = 0o600) -> None:
        target = self.host_path(node_path)
        partial = target.with_name(f".{target.name}.partial")
        partial.write_bytes(data)
        partial.chmod(mode)
        os.replace(partial, target)

    def delete_file(self, node_path: str | Path) -> None:
        self.host_path(node_path).unlink(missing_ok=True)

    def list_sockets(self, node_dir: str | Path) -> list[str]:
        directory = self.host_path(node_dir)
        return sorted(entry.name for entry in directory.iterdir() if entry.is_socket()) if directory.exists() else []

    # -- logs --------------------------------------------------------------------------------
    def kubelet_log_mark(self) -> int:
        log = self.cluster.layout.log("kubelet")
        return log.stat().st_size if log.exists() else 0

    def kubelet_log_since(self, mark: int) -> str:
        with self.cluster.layout.log("kubelet").open("rb") as log:
            log.seek(mark)
            return log.read().decode(errors="replace")

    # -- container runtime -------------------------------------------------------------------
    def pod_sandboxes(self) -> list[Sandbox]:
        with CRIClient(str(self.cluster.layout.containerd_socket)) as cri:
            return cri.sandboxes()

    def runtime_info(self) -> dict:
        with CRIClient(str(self.cluster.layout.containerd_socket)) as cri:
            return cri.status_info()

    # -- whole-node faults -------------------------------------------------------------------
    def remove_all_sandboxes(self) -> int:
        with CRIClient(str(self.cluster.layout.containerd_socket)) as cri:
            return len(cri.remove_all_sandboxes())

    def simulate_reboot(self) -> int:
        self.stop_kubelet()
        removed = self.remove_all_sandboxes()
        self.start_kubelet(*self._current_binary())
        return removed

    def containers_running(self) -> int:
        with CRIClient(str(self.cluster.layout.containerd_socket)) as cri:
            return cri.running_container_count()
