"""What a test holds for a vendor's subject (issue 12, part 2): the black-box part of a fake's handle.

A fake's handle (fakes/common/handle.py) can inject faults, read a call log and be told what to serve; a
vendor's binary can only be started, stopped, killed and restarted, with the node's paths filled into its
command line (vendor_spec.py). Everything else a black-box test needs it reads from the outside: node status,
podresources, pod status, the kubelet's metrics (kube/kubelet_metrics.py) and checkpoint.

`CAPABILITIES` says what a handle can do; tests that need more skip as NOT APPLICABLE in vendor mode
(pytest_plugin/vendor.py), never pass. Kind and existing clusters will start the subject as a DaemonSet and
kill it through the provider's node control: only this class's process methods change then.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

from device_conformance.fakes.common.handle import PROCESS, ProcessHandle
from device_conformance.fakes.common.process import FakeProcess
from device_conformance.kube.kubelet_metrics import KubeletCounts
from device_conformance.vendor_spec import DEVICE_PLUGIN, NODE_PATHS, VendorSpec

# A vendor's subject can only be run (the names: fakes/common/handle.py).
VENDOR_CAPABILITIES = frozenset({PROCESS})

CommandFor = Callable[[Mapping[str, str]], str]


def node_values(spec: VendorSpec, node: object, kubeconfig: Path) -> dict[str, str]:
    """The placeholders' values for one node: host paths of its kubelet directories, its name, the cluster."""
    host_path = node.host_path  # type: ignore[attr-defined]
    values = {name: str(host_path(path)) for name, path in NODE_PATHS.items()}
    values.update(kubeconfig=str(kubeconfig), node_name=node.name)  # type: ignore[attr-defined]
    values["on_node"] = shlex.join(node.command_prefix())  # type: ignore[attr-defined]
    values["resource" if spec.kind == DEVICE_PLUGIN else "driver"] = spec.name
    return values


class VendorHandle(ProcessHandle):
    CAPABILITIES = VENDOR_CAPABILITIES

    def __init__(self, spec: VendorSpec, command: str, workdir: Path, counts: KubeletCounts) -> None:
        self.spec, self.command, self.workdir, self.counts = spec, command, workdir, counts
        workdir.mkdir(parents=True, exist_ok=True)
        self.process = FakeProcess(["/bin/sh", "-c", f"exec {command}"], workdir / "subject.log")
        self.starts = 0

    @property
    def name(self) -> str:
        return f"vendor {self.spec.kind} {self.spec.name} (pid {self.pid})"

    def start(self) -> None:
        """Start the subject; it counts as started once its process runs (readiness is the caller's wait on
        what the kubelet shows: node status, registration)."""
        if self.is_running():
            raise RuntimeError(f"{self.name} is still running; stop() or kill() it first")
        self.process.spawn(lambda: True, f"{self.name} to start", 10.0)
        self.starts += 1

    respawn = start  # the fakes' name for "start again after kill() or stop()"

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (a well-behaved subject removes its sockets), SIGKILL after `timeout`; whatever it left in
        its session goes too."""
        code = self.process.stop(timeout)
        pid = self.process.pid
        if pid is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        return code

    def restart(self, *, kill: bool = False) -> None:
        if kill:
            self.kill()
        else:
            self.stop()
        self.start()

    def cleanup(self) -> None:
        self.stop()

    def report(self) -> str:
        """For a failing test's artifacts: the command and the subject's output."""
        return f"command: {self.command}\nstarts: {self.starts}\n--- output (last 80 lines) ---\n{self.log_tail(80)}"


class VendorDevicePluginHandle(VendorHandle):
    """A vendor's device plugin on the node; `resource_name` is what it registers."""

    @property
    def resource_name(self) -> str:
        return self.spec.name


class VendorDraDriverHandle(VendorHandle):
    """A vendor's DRA kubelet plugin on the node; `driver_name` is its driver."""

    @property
    def driver_name(self) -> str:
        return self.spec.name
