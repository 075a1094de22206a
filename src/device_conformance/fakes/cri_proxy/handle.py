"""Start the CRI proxy as a separate process and drive it: faults on the CRI calls the kubelet makes, the call
log of every call it made through the proxy."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.calls import Call
from device_conformance.fakes.common.faults import DROP, Fault
from device_conformance.fakes.common.handle import FakeHandle
from device_conformance.fakes.common.process import FakeProcess
from device_conformance.fakes.common.sockets import check_socket_path, control_socket_path
from device_conformance.fakes.cri_proxy.config import CRIProxyConfig
from device_conformance.fakes.cri_proxy.containers import CONTAINER, POD, TARGET_FORMS


def proxy_argv(config_path: str | Path, *, python: str = sys.executable, exit_with_parent: bool = False) -> list[str]:
    argv = [python, "-m", "device_conformance.fakes.cri_proxy", "--config", str(config_path)]
    return [*argv, "--exit-with-parent", str(os.getpid())] if exit_with_parent else argv


def is_snapshot(call: Call) -> bool:
    """A ListContainers call without a filter: the container manager's snapshot at kubelet start
    (pkg/kubelet/cm/helpers.go buildContainerMapAndRunningSetFromRuntime calls ListContainers(ctx, nil)); the
    runtime manager's listings always carry a filter, an empty one for all containers
    (pkg/kubelet/kuberuntime/kuberuntime_container.go getKubeletContainers)."""
    return call.method == "ListContainers" and "filter" not in call.request


class CRIProxyHandle(FakeHandle):
    REGISTRATION_METHOD = ""  # the proxy registers nowhere: the kubelet is pointed at it
    WAIT_TIMEOUT = 30.0
    CONTROL_TIMEOUT = 30.0

    def __init__(self, config: CRIProxyConfig, workdir: Path, python: str = sys.executable) -> None:
        """Use start(); config must have control_socket and call_log filled in."""
        self.config, self.workdir = config, workdir
        self.config_path = workdir / "cri-proxy.json"
        process = FakeProcess(
            proxy_argv(self.config_path, python=python, exit_with_parent=True), workdir / "cri-proxy.log"
        )
        super().__init__("CRI proxy", process, config.control_socket, config.call_log)

    @classmethod
    def start(
        cls, config: CRIProxyConfig, workdir: str | Path, *, stall: float | None = None, python: str = sys.executable
    ) -> CRIProxyHandle:
        """Spawn the proxy (own session, output to <workdir>/cri-proxy.log) and wait until its control socket
        answers, which is after it serves on config.socket."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        control, short_dir = config.control_socket, None
        if not control:
            control, short_dir = control_socket_path(str(workdir / "cri-proxy.ctl"), "crip-")
        config = dataclasses.replace(
            config, control_socket=control, call_log=config.call_log or str(workdir / "cri-proxy.calls.jsonl")
        )
        handle = cls(config, workdir, python)
        handle._short_dir = short_dir
        try:
            check_socket_path(config.socket, "CRI proxy socket")
            check_socket_path(config.upstream, "container runtime socket")
            check_socket_path(config.control_socket, "control socket")
            config.save(handle.config_path)
            handle.respawn(stall)
        except BaseException:
            handle.cleanup()
            raise
        return handle

    def _sockets(self) -> Iterable[str]:
        return [self.config.socket]

    def drop(self, *, container: str | None = None, pod: str | None = None, times: int | None = None) -> None:
        """Leave out of ListContainers answers the containers named `container`, or every container of `pod`
        ("NAMESPACE/NAME"): the next `times` answers, or until clear_faults()."""
        if (container is None) == (pod is None):
            raise BadInput(
                f"drop(container={container!r}, pod={pod!r}): name exactly one", f"give one of {TARGET_FORMS}"
            )
        target = f"{CONTAINER}={container}" if container is not None else f"{POD}={pod}"
        self.inject(Fault("ListContainers", DROP, target=target, times=times))

    def snapshots(self) -> list[Call]:
        """The kubelet's snapshots of the runtime's containers at its starts (is_snapshot), in order."""
        return [c for c in self.calls("ListContainers") if is_snapshot(c)]

    def wait_for_snapshot(self, count: int = 1, *, timeout: float | None = None) -> Call:
        """Wait until the kubelet took its count-th snapshot (finished); returns it."""

        def probe() -> Call | None:
            done = [c for c in self.snapshots() if c.done]
            return done[count - 1] if len(done) >= count else None

        return self.wait(
            f"the kubelet's snapshot #{count} of the runtime's containers (ListContainers, no filter)", probe, timeout
        )
