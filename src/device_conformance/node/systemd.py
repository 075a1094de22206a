"""KubeletService of a node whose kubelet is systemd's kubelet.service (kind's node image; kubeadm hosts),
driven through the node's NodeTransport.run: systemctl, `kill` by MainPID, journald, healthz with curl."""

from __future__ import annotations

import signal
import time
from pathlib import Path

from device_conformance.core.errors import ConformanceError, ProviderCapabilityMissing
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.commands import CommandRunner

UNIT = "kubelet"
# The kubelet's healthz (KubeletConfiguration healthzBindAddress/healthzPort defaults), on the node.
HEALTHZ = "http://127.0.0.1:10248/healthz"
STOP_TIMEOUT = 60


class SystemdKubelet:
    """systemd restarts a killed kubelet by itself (kind's kubelet.service: Restart=always, RestartSec=1s,
    StartLimitIntervalSec=0), so exited() is always None. Nodes that can swap in another kubelet binary
    override put_in_place()."""

    def __init__(self, node: str, run: CommandRunner) -> None:
        self.node = node
        self.run = run

    def put_in_place(self, binary: Path | None, version: KubeVersion | None) -> None:
        """Make `binary` (None: the node's own kubelet) what the unit starts next, configured for `version`."""
        if binary is not None:
            raise ProviderCapabilityMissing(f"node {self.node} cannot run another kubelet binary ({binary})")

    def start(self, binary: Path | None, version: KubeVersion | None) -> None:
        self.put_in_place(binary, version)
        self.run(["systemctl", "start", UNIT])

    def stop(self) -> None:
        self.run(["systemctl", "stop", UNIT], timeout=STOP_TIMEOUT + 30)

    def pid(self) -> int:
        """MainPID of the unit, in the node's pid namespace (0 when the kubelet is not running)."""
        return int(self.run(["systemctl", "show", "--property=MainPID", "--value", UNIT]).strip() or 0)

    def signal(self, sig: signal.Signals) -> None:
        pid = self.pid()
        if pid == 0:
            raise ConformanceError(f"signal {sig.name}: no kubelet runs on {self.node}")
        self.run(["kill", "-s", sig.name.removeprefix("SIG"), str(pid)])

    def healthy(self) -> bool:
        probe = self.run(["curl", "-sf", "--max-time", "2", HEALTHZ], check=False, timeout=30)
        return probe.strip() == b"ok"

    def exited(self) -> str | None:
        return None

    def log_mark(self) -> int:
        """Microseconds since the epoch: node and host share the kernel clock, journald stamps with it to the
        microsecond. Whole seconds would take in what the kubelet logged earlier in the mark's second (a pod's
        first "SyncLoop ADD" read as its re-admission after a restart that followed within that second)."""
        return time.time_ns() // 1000

    def log_since(self, mark: int) -> str:
        # journalctl's "@" timestamps take fractional seconds (systemd.time(7): "@" + seconds since the epoch).
        since = f"@{mark // 1_000_000}.{mark % 1_000_000:06d}"
        argv = ["journalctl", f"--unit={UNIT}.service", f"--since={since}", "--output=cat", "--no-pager", "--quiet"]
        return self.run(argv, timeout=60).decode(errors="replace")
