"""The local provider's node: processes in a private mount namespace on this host, state in a run directory.

The kubelet is our child process (LocalCluster starts it); LocalKubelet is its supervisor, in place of
kind's systemd unit. Every node-private path (/var/lib/kubelet, /var/run/cdi, ...) is a bind mount of the
run directory inside the namespace, so the host reaches all of them directly.
"""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from device_conformance.core.errors import CommandError, ConformanceError
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.base import NodeControl
from device_conformance.node.cri import CRIClient
from device_conformance.providers.local.cluster import LocalCluster
from device_conformance.providers.local.layout import NODE_PRIVATE_PATHS
from device_conformance.providers.local.processes import ProcessRecord, exit_reason
from device_conformance.wait.core import Pending, until

STOP_GRACE = 60  # SIGTERM, then SIGKILL after this long
KILL_TIMEOUT = 10


class LocalTransport:
    """NodeTransport of the local provider's node."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster
        self.name = cluster.state.node_name
        self.mounts = {PurePosixPath(path): cluster.layout.private(path) for path in NODE_PRIVATE_PATHS}
        self.kubelet_service = LocalKubelet(cluster)

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, check: bool = True, timeout: float = 120
    ) -> bytes:
        # The node shares the host's pid and network namespaces: only its mounts are its own.
        wrapped = self.cluster.namespace.wrap(list(argv))
        proc = subprocess.run(wrapped, input=stdin, capture_output=True, timeout=timeout, check=False)
        if check and proc.returncode != 0:
            raise CommandError(wrapped, proc.returncode, (proc.stdout + proc.stderr).decode(errors="replace"))
        return proc.stdout

    def cri(self) -> CRIClient:
        return CRIClient(str(self.cluster.layout.containerd_socket))

    def runtime_socket(self) -> str:
        """containerd's socket (NodeControl.runtime_socket): a host path, the node sees it at the same path."""
        return str(self.cluster.layout.containerd_socket)

    def set_runtime_endpoint(self, endpoint: str | None) -> None:
        """NodeControl.set_runtime_endpoint: the kubelet config of its next start names `endpoint` (held in memory
        only: a kept cluster's kubelet started again by a later run is on containerd)."""
        self.cluster.runtime_endpoint = endpoint

    def command_prefix(self) -> list[str]:
        """What runs a long-lived process in the node's mount namespace (NodeControl.command_prefix): nsenter
        execs, so the process's pid is the command's own and a SIGKILL to it reaches the subject."""
        return self.cluster.namespace.wrap([])


class LocalKubelet:
    """KubeletService: the kubelet as LocalCluster's child process, its log a file of the run directory."""

    def __init__(self, cluster: LocalCluster) -> None:
        self.cluster = cluster

    def _process(self) -> ProcessRecord | None:
        return self.cluster.state.process("kubelet")

    def start(self, binary: Path | None, version: KubeVersion | None) -> None:
        self.cluster.start_kubelet(binary, version)

    def stop(self) -> None:
        process = self._process()
        if process is not None:
            process.stop(grace=STOP_GRACE)

    def pid(self) -> int:
        process = self._process()
        return process.pid if process is not None and process.alive() else 0

    def signal(self, sig: signal.Signals) -> None:
        process = self._process()
        if process is None or not process.alive():
            raise ConformanceError(f"signal {sig.name}: no kubelet runs on {self.cluster.state.node_name}")
        process.signal(sig)
        if sig == signal.SIGKILL:
            until(
                lambda: True if not process.alive() else Pending(f"pid {process.pid} still alive"),
                what="the SIGKILLed kubelet to die",
                timeout=KILL_TIMEOUT,
            )
            # We are the kubelet's supervisor; like systemd's Restart=always we start the same one again.
            self.cluster.start_kubelet(*self._running_as(process))

    def _running_as(self, process: ProcessRecord) -> tuple[Path, KubeVersion]:
        binary = next(Path(arg) for arg in process.argv if arg.endswith("/kubelet"))
        return binary, self.cluster.kubelet_version

    def healthy(self) -> bool:
        return self.cluster.kubelet_healthy()

    def exited(self) -> str | None:
        process = self._process()
        if process is None:
            return "was never started"
        return None if process.alive() else exit_reason(process)

    def log_mark(self) -> int:
        log = self.cluster.layout.log("kubelet")
        return log.stat().st_size if log.exists() else 0

    def log_since(self, mark: int) -> str:
        with self.cluster.layout.log("kubelet").open("rb") as log:
            log.seek(mark)
            return log.read().decode(errors="replace")


class LocalNode(NodeControl):
    def __init__(self, cluster: LocalCluster) -> None:
        super().__init__(LocalTransport(cluster))
        self.cluster = cluster
