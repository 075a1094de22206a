"""The seam between the harness and one node: all a provider implements to give the suites a node.

Modelled on kind, whose node type is a handful of primitives (sigs.k8s.io/kind pkg/cluster/nodes/types.go:
run a command, name, role, IP, serial log) with everything else written once on top of it
(pkg/cluster/nodeutils). Here the node API the suites use (files, sockets, CRI, the reboot simulation:
node/base.py) and kubelet control (restart, crash, freeze, binary swap, logs: node/kubelet.py) are written
once over these two protocols:

- NodeTransport: how the harness reaches the node (a command on it, its directories bound from the host,
  its container runtime) and which supervisor runs its kubelet;
- KubeletService: that supervisor. systemd's kubelet.service is written once for every systemd node
  (node/systemd.py: kind, and a node agent on an existing cluster); the local provider supervises the
  kubelet itself as a child process (providers/local/node.py).

Node paths are POSIX paths as the kubelet on the node sees them (/var/lib/kubelet/...).
"""

from __future__ import annotations

import signal
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path, PurePosixPath
from typing import Protocol, runtime_checkable

from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.cri import CRIRuntime


@runtime_checkable
class KubeletService(Protocol):
    """The node's kubelet under its supervisor. Primitives only: waiting for health, refusing to start a
    running kubelet, thawing before a stop and the restart order live in KubeletControl."""

    def start(self, binary: Path | None, version: KubeVersion | None) -> None:
        """Start the kubelet under the supervisor and return without waiting for its health.

        `binary` (a file on the test host) runs instead of the node's own kubelet, with a kubelet config
        that follows `version`'s settings rules (expectations.cluster.settings_for; None: the node's own
        settings). `binary=None`: the node's own kubelet and config, put back if another was swapped in.
        Called only while no kubelet runs."""
        ...

    def stop(self) -> None:
        """Stop the kubelet gracefully (SIGTERM; SIGKILL after a grace period) so that the supervisor does
        not start it again; return once the process is gone. A no-op when none runs."""
        ...

    def pid(self) -> int:
        """The running kubelet's pid as `run` sees it on the node; 0 while none runs."""
        ...

    def signal(self, sig: signal.Signals) -> None:
        """Send `sig` to the running kubelet (ConformanceError when none runs). A kubelet killed by SIGKILL
        is started again by the supervisor on its own, the same binary and config, like systemd's
        Restart=always (kind's kubelet.service); pid() then shows the new process."""
        ...

    def healthy(self) -> bool:
        """Whether the kubelet's /healthz answers "ok" right now (False when it does not answer)."""
        ...

    def exited(self) -> str | None:
        """Why the kubelet is gone for good ("exited with status 1"), or None while it runs or the
        supervisor will start it again (systemd's Restart=always: always None). Ends a health wait early."""
        ...

    def log_mark(self) -> int:
        """A position in the kubelet's log: what it logs from now on is in log_since(mark)."""
        ...

    def log_since(self, mark: int) -> str:
        """The kubelet's log from `mark` on, across restarts."""
        ...


@runtime_checkable
class NodeTransport(Protocol):
    """How the harness reaches one node."""

    name: str
    """The node's name (its Node object in the API server)."""

    mounts: Mapping[PurePosixPath, Path]
    """Node directory -> the host directory bound onto it. Paths under these are read, written and served
    (fake plugins' sockets) on the host directly; every other node path goes through `run`."""

    kubelet_service: KubeletService
    """The supervisor of the node's kubelet."""

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, check: bool = True, timeout: float = 120
    ) -> bytes:
        """Run argv on the node (its mount namespace, its pid namespace: pids are KubeletService.pid()'s)
        with `stdin` as its input; return its stdout. A non-zero exit raises CommandError (with the
        output) when `check`, else the stdout is returned as it is."""
        ...

    def cri(self) -> AbstractContextManager[CRIRuntime]:
        """The node's container runtime (CRI), open for the `with` block."""
        ...
