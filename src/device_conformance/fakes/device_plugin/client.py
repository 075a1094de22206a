"""Driving a running fake device plugin through its control socket (no process management here).

DevicePluginHandle adds the process; a provider that launches the plugin elsewhere can use
DevicePluginControl on its own with the control socket path.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any, TypeVar

import grpc

from device_conformance.errors import ConformanceError
from device_conformance.fakes.device_plugin.calllog import REGISTER, RPC, CallRecord, RegistrationRecord
from device_conformance.fakes.device_plugin.config import HEALTHY, DeviceConfig
from device_conformance.fakes.waiting import NotYet, wait_until

T = TypeVar("T")


class ControlError(ConformanceError):
    """The control channel failed, or the plugin refused an operation."""


def _code_name(code: str | grpc.StatusCode) -> str:
    return code.name if isinstance(code, grpc.StatusCode) else code.upper()


class DevicePluginControl:
    def __init__(self, control_socket: str, *, name: str = "device plugin", timeout: float = 30.0) -> None:
        self.control_socket = control_socket
        self.name = name
        self.timeout = timeout

    # -- device list (each change makes open ListAndWatch streams send the full list) -----------

    def set_health(self, device_id: str, healthy: bool) -> None:
        self._call("set_health", device_id=device_id, healthy=healthy)

    def set_devices(self, devices: Sequence[DeviceConfig | str]) -> None:
        """Replace the whole device list (a plain string is a healthy device without topology)."""
        devs = [DeviceConfig(d) if isinstance(d, str) else d for d in devices]
        self._call("set_devices", devices=[asdict(d) for d in devs])

    def add_device(self, device_id: str, *, health: str = HEALTHY, numa_nodes: Sequence[int] = ()) -> None:
        self._call("add_device", device=asdict(DeviceConfig(device_id, health, list(numa_nodes))))

    def remove_device(self, device_id: str) -> None:
        self._call("remove_device", device_id=device_id)

    def end_stream(self, error: str | None = None, *, code: str | grpc.StatusCode = "INTERNAL") -> int:
        """End every open ListAndWatch stream: cleanly, or with status `code` and message `error`.
        Returns how many streams were open."""
        return self._call("end_stream", error=error, code=_code_name(code))["open_streams"]

    # -- faults ---------------------------------------------------------------------------------

    def fail(self, method: str, code: str | grpc.StatusCode, message: str, times: int | None = None) -> None:
        """Make `method` (e.g. "Allocate") fail with this status; only the next `times` calls if given."""
        self._call("fail", method=method, code=_code_name(code), message=message, times=times)

    def block(self, method: str) -> None:
        """Calls of `method` wait (after being logged) until unblock(method) or clear_faults()."""
        self._call("block", method=method)

    def unblock(self, method: str) -> None:
        self._call("unblock", method=method)

    def clear_faults(self) -> None:
        self._call("clear_faults")

    # -- serving and registration ---------------------------------------------------------------

    def stop_serving(self, socket_name: str | None = None) -> None:
        """Close the gRPC server(s) and remove the socket(s); all when socket_name is None."""
        self._call("stop_serving", socket_name=socket_name)

    def start_serving(self, socket_name: str | None = None) -> None:
        self._call("start_serving", socket_name=socket_name)

    def register(
        self, socket_name: str | None = None, version: str | None = None, resource_name: str | None = None
    ) -> RegistrationRecord:
        """Register now and return the outcome (the kubelet's error text in .error when rejected)."""
        return RegistrationRecord(
            **self._call("register", socket_name=socket_name, version=version, resource_name=resource_name)
        )

    def hold_registration(self, hold: bool = True) -> None:
        """Hold back automatic registration; hold_registration(False) makes the one owed, if any."""
        self._call("hold_registration", hold=hold)

    # -- observing ------------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        return self._call("status")

    def wait_for_status(
        self, what: str, check: Callable[[dict[str, Any]], bool], *, timeout: float = 10.0
    ) -> dict[str, Any]:
        """Wait until check(status()) holds, e.g. lambda s: s["registration_owed"]; returns that status."""

        def probe() -> dict[str, Any]:
            status = self.status()
            if not check(status):
                shown = {k: status[k] for k in ("serving", "held", "registration_owed", "open_streams", "devices")}
                raise NotYet(f"status {shown}")
            return status

        return self._wait(f"{self.name}: {what}", probe, timeout)

    def calls(self, method: str | None = None, *, kind: str | None = RPC) -> list[CallRecord]:
        """Calls in order; by default only RPCs the kubelet made (kind=None gives every record)."""
        records = [CallRecord.from_dict(r) for r in self._call("calls")]
        return [r for r in records if (kind is None or r.kind == kind) and method in (None, r.method)]

    def registrations(self) -> list[RegistrationRecord]:
        return [RegistrationRecord.from_call(r) for r in self.calls(kind=REGISTER) if r.done]

    def wait_for_call(
        self, method: str, count: int = 1, *, done: bool = False, timeout: float = 10.0
    ) -> list[CallRecord]:
        """Wait until `method` was called at least `count` times (finished, if done); returns those calls."""

        def probe() -> list[CallRecord]:
            seen = [c for c in self.calls(method) if c.done or not done]
            if len(seen) < count:
                recent = ", ".join(c.summary() for c in self.calls()[-5:]) or "no calls at all"
                raise NotYet(f"{len(seen)} {method} call(s); latest calls: {recent}")
            return seen

        state = " finished" if done else ""
        return self._wait(f"{count}{state} {method} call(s) on {self.name}", probe, timeout)

    def wait_for_registration(
        self, count: int = 1, *, ok: bool | None = True, timeout: float = 10.0
    ) -> RegistrationRecord:
        """Wait for the count-th registration (successful ones only when ok=True); returns the latest."""

        def probe() -> RegistrationRecord:
            regs = [r for r in self.registrations() if ok is None or r.ok == ok]
            if len(regs) < count:
                last = self.registrations()[-1:] or ["none"]
                raise NotYet(f"{len(regs)} matching registration(s); last: {last[0]}")
            return regs[-1]

        return self._wait(f"{count} registration(s) (ok={ok}) of {self.name}", probe, timeout)

    # -- plumbing -------------------------------------------------------------------------------

    def _wait(self, what: str, probe: Callable[[], T], timeout: float) -> T:
        return wait_until(what, probe, timeout)

    def _call(self, op: str, **args: Any) -> Any:
        request = json.dumps({"op": op, "args": args}).encode() + b"\n"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout)
                sock.connect(self.control_socket)
                sock.sendall(request)
                answer = sock.makefile("rb").readline()
        except OSError as err:
            raise ControlError(f"{self.name}: control socket {self.control_socket} failed on {op!r}: {err}") from err
        if not answer:
            raise ControlError(f"{self.name}: control socket {self.control_socket} closed without answering {op!r}")
        reply = json.loads(answer)
        if not reply["ok"]:
            raise ControlError(f"{self.name}: {op}({args}) refused: {reply['error']}")
        return reply["result"]
