"""The handle fixtures use: spawn the fake DRA driver process, drive it, read what it saw, clean up.

drv = start(DriverConfig(driver_name="dra.example.com", node_name=..., registry_dir=...,
                         plugin_dir=...), workdir)
drv.wait_for_registration()
drv.fail_prepare("boom", times=1)
drv.wait_for_call("NodePrepareResources", ok=True)
drv.cleanup()
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from device_conformance.fakes.common.calls import Call, Registration
from device_conformance.fakes.common.handle import FakeHandle
from device_conformance.fakes.common.process import FakeProcess
from device_conformance.fakes.common.sockets import control_socket_path
from device_conformance.fakes.dra_driver.config import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.state import load_state
from device_conformance.wait.core import Pending

__all__ = ["DraDriverHandle", "start"]

MODULE = "device_conformance.fakes.dra_driver"
# A publish is a few API calls with 15 s timeouts each; the control reply waits for it.
PUBLISH_TIMEOUT = 120.0
PREPARE, UNPREPARE = "NodePrepareResources", "NodeUnprepareResources"


def start(config: DriverConfig, workdir: str | os.PathLike[str], *, stall: float | None = None) -> DraDriverHandle:
    """Spawn the driver in its own session, wait until its control socket answers, return the handle. The
    wait lasts as long as the process makes progress; `stall`: seconds without any before it counts as hung.

    Filled in when empty: call_log (<workdir>/calls.jsonl), state_file (<workdir>/state.json) and
    control_socket (<workdir>/driver.ctl, or in a short directory under /tmp removed by cleanup()).
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    control, short_dir = config.control_socket, None
    if not control:
        control, short_dir = control_socket_path(str(workdir / "driver.ctl"), "dra-ctl-")
    config = dataclasses.replace(
        config,
        call_log=config.call_log or str(workdir / "calls.jsonl"),
        state_file=config.state_file or str(workdir / "state.json"),
        control_socket=control,
    )
    handle = DraDriverHandle(config, workdir)
    handle._short_dir = short_dir
    try:
        config.validate()
        handle.config_path.write_text(config.to_json())
        handle.respawn(stall)
    except BaseException:
        handle.cleanup()  # the caller gets no handle to clean up with
        raise
    return handle


def registration_of(call: Call) -> Registration:
    """The kubelet's NotifyRegistrationStatus."""
    return Registration(
        seq=call.seq,
        pid=call.pid,
        ok=bool(call.request.get("plugin_registered")),
        error=call.request.get("error", ""),
        started_mono=call.started_mono,
        started_wall=call.started_wall,
        ended_mono=call.ended_mono,
    )


class DraDriverHandle(FakeHandle):
    REGISTRATION_METHOD = "NotifyRegistrationStatus"
    WAIT_TIMEOUT = 60.0
    CONTROL_TIMEOUT = 10.0

    def __init__(self, config: DriverConfig, workdir: Path) -> None:
        """Use start(); config must have control_socket, call_log and state_file filled in."""
        self.config, self.workdir = config, workdir
        self.config_path = workdir / "driver-config.json"
        process = FakeProcess(self.argv, workdir / "driver.log")
        super().__init__(f"fake DRA driver {config.driver_name}", process, config.control_socket, config.call_log)

    @property
    def argv(self) -> list[str]:
        """How the process is launched: [python, -m, device_conformance.fakes.dra_driver, --config, FILE,
        --exit-with-parent, OUR_PID]: a test run killed with SIGKILL, even while the driver was starting, leaves
        no driver behind (bench/interrupt.py, soak). FakeProcess starts it as our own child."""
        argv = [sys.executable, "-m", MODULE, "--config", str(self.config_path)]
        return [*argv, "--exit-with-parent", str(os.getpid())]

    def _sockets(self) -> Iterable[str]:
        return [self.config.registration_socket, self.config.service_socket]

    @property
    def driver_name(self) -> str:
        """Its driver name (as a vendor handle names it, vendor_handles.py)."""
        return self.config.driver_name

    @staticmethod
    def _registration(call: Call) -> Registration:
        return registration_of(call)

    # --- faults in the driver's own words ------------------------------------------------------

    def fail_prepare(
        self,
        message: str = "injected NodePrepareResources failure",
        *,
        code: str = "UNKNOWN",
        per_claim: bool = False,
        claim_uid: str | None = None,
        times: int | None = None,
    ) -> None:
        """Fail NodePrepareResources with a gRPC status (code) or, per_claim, in the claim's `error` field."""
        self._fail_claim_call(PREPARE, message, code, per_claim, claim_uid, times)

    def fail_unprepare(
        self,
        message: str = "injected NodeUnprepareResources failure",
        *,
        code: str = "UNKNOWN",
        per_claim: bool = False,
        claim_uid: str | None = None,
        times: int | None = None,
    ) -> None:
        """Fail NodeUnprepareResources, like fail_prepare."""
        self._fail_claim_call(UNPREPARE, message, code, per_claim, claim_uid, times)

    def _fail_claim_call(
        self, method: str, message: str, code: str, per_claim: bool, claim_uid: str | None, times: int | None
    ) -> None:
        if per_claim:
            self.fail_claims(method, message, claim_uid=claim_uid, times=times)
        else:
            self.fail(method, code, message, claim_uid=claim_uid, times=times)

    def fail_get_info(
        self, message: str = "injected GetInfo failure", *, code: str = "UNKNOWN", times: int | None = None
    ) -> None:
        self.fail("GetInfo", code, message, times=times)

    def block_prepare(self, claim_uid: str | None = None) -> None:
        self.block(PREPARE, claim_uid=claim_uid)

    def block_unprepare(self, claim_uid: str | None = None) -> None:
        self.block(UNPREPARE, claim_uid=claim_uid)

    # --- servers, devices, slices, claims ------------------------------------------------------

    def stop_dra_service(self) -> None:
        self.control("stop_dra_service")

    def start_dra_service(self) -> None:
        self.control("start_dra_service")

    def stop_registrar(self) -> None:
        self.control("stop_registrar")

    def start_registrar(self) -> None:
        self.control("start_registrar")

    def push_health(
        self, updates: Mapping[str, str], *, message: str = "", timeout_seconds: int = 0, partial: bool = False
    ) -> int:
        """device -> Healthy/Unhealthy/Unknown on every open health stream; returns how many streams got it.
        partial: the report names only these devices, not every device the driver knows (allowed: "Reports may
        also cover a subset of devices", k8s.io/dynamic-resource-allocation v0.37.2 kubeletplugin/health.go)."""
        return self.control(
            "push_health", updates=dict(updates), message=message, timeout_seconds=timeout_seconds, partial=partial
        )

    def set_devices(self, devices: Sequence[DeviceSpec | Mapping[str, Any]]) -> dict[str, Any]:
        """Replace the device list and re-publish the slice (new pool generation)."""
        plain = [dataclasses.asdict(d) if isinstance(d, DeviceSpec) else dict(d) for d in devices]
        return self.control("set_devices", control_timeout=PUBLISH_TIMEOUT, devices=plain)

    def set_taints(self, device: str, taints: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        taints = [dict(t) for t in taints]
        return self.control("set_taints", control_timeout=PUBLISH_TIMEOUT, device=device, taints=taints)

    def devices(self) -> list[dict[str, Any]]:
        return self.control("devices")

    def publish_slices(self) -> dict[str, Any]:
        return self.control("publish_slices", control_timeout=PUBLISH_TIMEOUT)

    def wait_for_slices_published(self, *, timeout: float | None = None) -> dict[str, Any]:
        """With a kubeconfig: wait until the start-up (or latest) publish succeeded; returns status["slices"]."""

        def probe() -> dict[str, Any] | Pending:
            slices = self.status()["slices"]
            return slices if slices["published"] else Pending(str(slices))

        return self.wait("its ResourceSlice to be published", probe, timeout)

    def push_allocation(
        self, claim_uid: str, *, namespace: str, name: str, devices: Sequence[str | Mapping[str, Any]]
    ) -> None:
        """Without a kubeconfig: what the claim was allocated. A str is a device name serving all requests;
        a mapping is an allocation result {"device", "request", optional "pool", "shareID"}."""
        results = [{"device": d} if isinstance(d, str) else dict(d) for d in devices]
        self.control("push_allocation", claim_uid=claim_uid, namespace=namespace, name=name, results=results)

    def remove_allocation(self, claim_uid: str) -> None:
        self.control("remove_allocation", claim_uid=claim_uid)

    def ensure_device_class(self, name: str | None = None) -> dict[str, Any]:
        from device_conformance.fakes.dra_driver.kubeapi import ensure_device_class

        return ensure_device_class(
            self.config.driver_name,
            kubeconfig=self.config.kubeconfig,
            name=name,
            api_version=self.config.resource_api_version,
        )

    # --- what the driver holds (readable after a SIGKILL) -------------------------------------

    def prepared(self) -> dict[str, dict[str, Any]]:
        """Claim UID -> {namespace, name, devices, cdi_spec}; from the state file when the driver is down."""
        if self.is_running():
            return self.control("prepared")
        return load_state(self.config.state_file)["prepared"] if self.config.state_file else {}
