"""The handle fixtures use: spawn the fake DRA driver process, drive it, read what it saw, clean up.

drv = start(DriverConfig(driver_name="dra.example.com", node_name=..., registry_dir=...,
                         plugin_dir=...), workdir)
drv.wait_for_registration()
drv.fail_prepare("boom", times=1)
drv.wait_for_call("/NodePrepareResources", ok=True)
drv.cleanup()
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from device_conformance.fakes.dra_driver import control
from device_conformance.fakes.dra_driver.calllog import read_calls
from device_conformance.fakes.dra_driver.config import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.launch import DriverProcess, DriverStartError
from device_conformance.fakes.dra_driver.polling import summarize_calls, wait_until
from device_conformance.fakes.dra_driver.state import load_state

__all__ = ["DraDriverHandle", "DriverStartError", "start"]

# A publish is a few API calls with 15 s timeouts each; the control reply waits for it.
PUBLISH_TIMEOUT = 120.0


def start(config: DriverConfig, workdir: str | os.PathLike[str], *, ready_timeout: float = 20.0) -> DraDriverHandle:
    """Spawn the driver in its own session, wait until its control socket answers, return the handle.

    Filled in when empty: call_log (<workdir>/calls.jsonl), state_file (<workdir>/state.json) and
    control_socket (a short directory under /tmp, removed by cleanup()).
    """
    handle = DraDriverHandle(config, Path(workdir))
    try:
        handle._process.spawn(ready_timeout)
    except BaseException:
        handle.cleanup()  # the caller gets no handle to clean up with
        raise
    return handle


class DraDriverHandle:
    def __init__(self, config: DriverConfig, workdir: Path) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self._tmpdir: str | None = None
        control_socket = config.control_socket
        if not control_socket:
            self._tmpdir = tempfile.mkdtemp(prefix="dra-ctl-", dir="/tmp")  # sun_path: 107 bytes
            control_socket = os.path.join(self._tmpdir, "control.sock")
        self.config = dataclasses.replace(
            config,
            call_log=config.call_log or str(workdir / "calls.jsonl"),
            state_file=config.state_file or str(workdir / "state.json"),
            control_socket=control_socket,
        )
        self.config_path = workdir / "driver-config.json"
        self.log_path = workdir / "driver.log"
        self._process = DriverProcess(self.config, self.config_path, self.log_path)

    # --- process lifecycle ---------------------------------------------------------------------

    @property
    def argv(self) -> list[str]:
        """How the process is launched: [python, -m, device_conformance.fakes.dra_driver, --config, FILE]."""
        return self._process.argv

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def is_running(self) -> bool:
        return self._process.is_running()

    def kill(self) -> None:
        """SIGKILL: no cleanup in the driver, so its sockets stay behind like after a crash."""
        self._process.kill()

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (the driver removes its sockets), SIGKILL after timeout; returns the exit code."""
        return self._process.stop(timeout)

    def restart(self, *, kill: bool = False, ready_timeout: float = 20.0) -> DraDriverHandle:
        """Stop (or SIGKILL) and start again with the same config; the call log continues."""
        if kill:
            self.kill()
        else:
            self.stop()
        self._process.spawn(ready_timeout)
        return self

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the driver process's own output (all its runs)."""
        return self._process.log_tail(lines)

    def cleanup(self) -> None:
        """Idempotent: no process, no socket and no temporary directory left behind."""
        self.stop()
        for path in self.config.sockets():
            try:
                os.unlink(path)
            except OSError:  # gone already, or its directory is not one
                pass
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None

    def __enter__(self) -> DraDriverHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # --- control actions -----------------------------------------------------------------------

    def control(self, op: str, *, control_timeout: float = 10.0, **args: Any) -> Any:
        """Any control operation by name (see control.OPS)."""
        return control.call(self.config.control_socket, op, timeout=control_timeout, **args)

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
        self._fail_claim_call("NodePrepareResources", message, code, per_claim, claim_uid, times)

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
        self._fail_claim_call("NodeUnprepareResources", message, code, per_claim, claim_uid, times)

    def _fail_claim_call(
        self, method: str, message: str, code: str, per_claim: bool, claim_uid: str | None, times: int | None
    ) -> None:
        # No gRPC code means the driver answers OK and reports the error in the claim's result.
        code_or_none = None if per_claim else code
        self.control("fail", method=method, message=message, code=code_or_none, claim_uid=claim_uid, times=times)

    def fail_get_info(
        self, message: str = "injected GetInfo failure", *, code: str = "UNKNOWN", times: int | None = None
    ) -> None:
        self.control("fail", method="GetInfo", message=message, code=code, times=times)

    def clear_failures(self, method: str | None = None) -> None:
        """method: NodePrepareResources, NodeUnprepareResources, GetInfo, or None for all."""
        self.control("clear_failures", method=method)

    def block_prepare(self, claim_uid: str | None = None) -> None:
        self.control("block", method="NodePrepareResources", claim_uid=claim_uid)

    def block_unprepare(self, claim_uid: str | None = None) -> None:
        self.control("block", method="NodeUnprepareResources", claim_uid=claim_uid)

    def unblock(self, method: str | None = None, claim_uid: str | None = None) -> None:
        self.control("unblock", method=method, claim_uid=claim_uid)

    def blocked_calls(self) -> list[dict[str, Any]]:
        return self.control("blocked_calls")

    def wait_for_blocked(
        self, method: str = "NodePrepareResources", count: int = 1, *, timeout: float = 60.0
    ) -> list[dict[str, Any]]:
        """Wait until `count` calls of method are held by a block; returns them ({method, claims, since})."""
        return wait_until(
            f"{count} blocked {method} call(s) in fake DRA driver {self.config.driver_name}",
            lambda: [b for b in self.blocked_calls() if b["method"] == method],
            lambda held: len(held) >= count,
            lambda held: f"{len(held)} blocked; last calls: {summarize_calls(self.calls()[-5:])}",
            timeout,
            self.is_running,
        )

    def stop_dra_service(self) -> None:
        self.control("stop_dra_service")

    def start_dra_service(self) -> None:
        self.control("start_dra_service")

    def stop_registrar(self) -> None:
        self.control("stop_registrar")

    def start_registrar(self) -> None:
        self.control("start_registrar")

    def push_health(self, updates: Mapping[str, str], *, message: str = "", timeout_seconds: int = 0) -> int:
        """device -> Healthy/Unhealthy/Unknown on every open health stream; returns how many streams got it."""
        return self.control("push_health", updates=dict(updates), message=message, timeout_seconds=timeout_seconds)

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

    def wait_for_slices_published(self, *, timeout: float = 60.0) -> dict[str, Any]:
        """With a kubeconfig: wait until the start-up (or latest) publish succeeded; returns status["slices"]."""
        return wait_until(
            f"fake DRA driver {self.config.driver_name} to publish its ResourceSlice",
            lambda: self.status()["slices"],
            lambda slices: bool(slices["published"]),
            lambda slices: f"{slices}",
            timeout,
            self.is_running,
        )

    def push_allocation(
        self, claim_uid: str, *, namespace: str, name: str, devices: Sequence[str | Mapping[str, Any]]
    ) -> None:
        """Without a kubeconfig: what the claim was allocated. A str is a device name serving all requests;
        a mapping is an allocation result {"device", "request", optional "pool", "shareID"}."""
        results = [{"device": d} if isinstance(d, str) else dict(d) for d in devices]
        self.control("push_allocation", claim_uid=claim_uid, namespace=namespace, name=name, results=results)

    def remove_allocation(self, claim_uid: str) -> None:
        self.control("remove_allocation", claim_uid=claim_uid)

    def status(self) -> dict[str, Any]:
        return self.control("status")

    def ensure_device_class(self, name: str | None = None) -> dict[str, Any]:
        from device_conformance.fakes.dra_driver.kubeapi import ensure_device_class

        return ensure_device_class(
            self.config.driver_name,
            kubeconfig=self.config.kubeconfig,
            name=name,
            api_version=self.config.resource_api_version,
        )

    # --- what the driver saw (readable after a SIGKILL) ----------------------------------------

    def calls(self, method_suffix: str | None = None) -> list[dict[str, Any]]:
        """The ordered call log of every run of this driver; each entry has seq, pid, method (full gRPC
        name), request, response, error {code, message}, ok (no gRPC error, no per-claim error), start, end."""
        entries = read_calls(self.config.call_log)
        return [c for c in entries if method_suffix is None or c["method"].endswith(method_suffix)]

    def count_calls(self, method_suffix: str, *, ok: bool | None = None) -> int:
        return len(self._matching(method_suffix, ok))

    def _matching(self, method_suffix: str, ok: bool | None) -> list[dict[str, Any]]:
        return [c for c in self.calls(method_suffix) if ok is None or c["ok"] == ok]

    def wait_for_call(
        self, method_suffix: str, count: int = 1, *, ok: bool | None = None, timeout: float = 60.0
    ) -> list[dict[str, Any]]:
        """Wait until at least `count` calls whose method ends with method_suffix (and ok, if given) are
        logged; returns them."""
        return wait_until(
            f"{count} call(s) to *{method_suffix}"
            + ("" if ok is None else f" with ok={ok}")
            + f" on fake DRA driver {self.config.driver_name}",
            lambda: self._matching(method_suffix, ok),
            lambda found: len(found) >= count,
            lambda found: f"{len(found)} matching; last calls: {summarize_calls(self.calls()[-5:])}",
            timeout,
            self.is_running,
        )

    def registrations(self) -> list[dict[str, Any]]:
        """Every NotifyRegistrationStatus the kubelet sent: {plugin_registered, error, time, pid}."""
        return [{**c["request"], "time": c["start"], "pid": c["pid"]} for c in self.calls("/NotifyRegistrationStatus")]

    def wait_for_registration(
        self, registered: bool = True, *, count: int = 1, timeout: float = 60.0
    ) -> dict[str, Any]:
        """Wait for the count-th notification with plugin_registered == registered; returns it."""
        found = wait_until(
            f"kubelet to notify plugin_registered={registered} to fake DRA driver {self.config.driver_name}",
            lambda: [r for r in self.registrations() if r["plugin_registered"] == registered],
            lambda hits: len(hits) >= count,
            lambda _: f"notifications: {self.registrations()[-5:]}",
            timeout,
            self.is_running,
        )
        return found[count - 1]

    def prepared(self) -> dict[str, dict[str, Any]]:
        """Claim UID -> {namespace, name, devices, cdi_spec}; from the state file when the driver is down."""
        if self.is_running():
            return self.control("prepared")
        return load_state(self.config.state_file)["prepared"] if self.config.state_file else {}
