"""Start the fake device plugin as a separate process and drive it; used by tests and fixtures."""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import grpc

from device_conformance.fakes.common.calls import REGISTER, Call, Registration
from device_conformance.fakes.common.handle import FakeHandle, code_name
from device_conformance.fakes.common.process import FakeProcess
from device_conformance.fakes.common.sockets import check_socket_path, control_socket_path
from device_conformance.fakes.device_plugin.config import HEALTHY, DeviceConfig, DevicePluginConfig
from device_conformance.wait.core import Pending


def plugin_argv(config_path: str | Path, *, python: str = sys.executable, exit_with_parent: bool = False) -> list[str]:
    """The command line that runs the plugin; a provider can run it on any host with this package. With
    exit_with_parent the plugin exits once it is no longer a child of this process (FakeProcess starts it)."""
    argv = [python, "-m", "device_conformance.fakes.device_plugin", "--config", str(config_path)]
    return [*argv, "--exit-with-parent", str(os.getpid())] if exit_with_parent else argv


def registration_of(call: Call) -> Registration:
    """Our Register call and the kubelet's answer to it."""
    err = call.error or {}
    return Registration(
        seq=call.seq,
        pid=call.pid,
        ok=call.ok,
        error=err.get("message", ""),
        error_code=err.get("code", ""),
        started_mono=call.started_mono,
        started_wall=call.started_wall,
        ended_mono=call.ended_mono,
        socket_name=call.request.get("endpoint", ""),
        version=call.request.get("version", ""),
        resource_name=call.request.get("resource_name", ""),
        reason=(call.response or {}).get("reason", ""),
    )


class DevicePluginHandle(FakeHandle):
    REGISTRATION_METHOD = "Register"
    REGISTRATION_KIND = REGISTER
    WAIT_TIMEOUT = 10.0
    CONTROL_TIMEOUT = 30.0

    def __init__(self, config: DevicePluginConfig, workdir: Path, python: str = sys.executable) -> None:
        """Use start(); config must have control_socket and call_log filled in."""
        stem = Path(config.socket_name).stem
        self.config, self.workdir = config, workdir
        self.config_path = workdir / f"{stem}.json"
        process = FakeProcess(
            plugin_argv(self.config_path, python=python, exit_with_parent=True), workdir / f"{stem}.log"
        )
        super().__init__(f"fake device plugin {config.resource_name}", process, config.control_socket, config.call_log)
        self._socket_names = {config.socket_name}

    @classmethod
    def start(
        cls,
        config: DevicePluginConfig,
        workdir: str | Path,
        *,
        stall: float | None = None,
        python: str = sys.executable,
    ) -> DevicePluginHandle:
        """Spawn the plugin (own session, output to <workdir>/<socket stem>.log) and wait until its
        control socket answers, which is after it serves and made its first registration attempt; for as
        long as it makes progress (`stall`: seconds without any before it counts as hung)."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        stem = Path(config.socket_name).stem
        control, short_dir = config.control_socket, None
        if not control:
            control, short_dir = control_socket_path(str(workdir / f"{stem}.ctl"), "dp-")
        config = dataclasses.replace(
            config, control_socket=control, call_log=config.call_log or str(workdir / f"{stem}.calls.jsonl")
        )
        handle = cls(config, workdir, python)
        handle._short_dir = short_dir
        try:
            check_socket_path(config.socket_path(), "device plugin socket")
            check_socket_path(config.kubelet_socket_path, "kubelet socket")
            check_socket_path(config.control_socket, "control socket")
            config.save(handle.config_path)
            handle.respawn(stall)
        except BaseException:
            handle.cleanup()
            raise
        return handle

    def _sockets(self) -> Iterable[str]:
        return [self.config.socket_path(name) for name in self._socket_names]

    @property
    def resource_name(self) -> str:
        """The resource it registers (as a vendor handle names it, vendor_handles.py)."""
        return self.config.resource_name

    # -- device list (each change makes open ListAndWatch streams send the full list) ---------------

    def set_health(self, device_id: str, healthy: bool) -> None:
        self.control("set_health", device_id=device_id, healthy=healthy)

    def set_devices(self, devices: Sequence[DeviceConfig | str]) -> None:
        """Replace the whole device list (a plain string is a healthy device without topology)."""
        devs = [DeviceConfig(d) if isinstance(d, str) else d for d in devices]
        self.control("set_devices", devices=[asdict(d) for d in devs])

    def add_device(self, device_id: str, *, health: str = HEALTHY, numa_nodes: Sequence[int] = ()) -> None:
        self.control("add_device", device=asdict(DeviceConfig(device_id, health, list(numa_nodes))))

    def remove_device(self, device_id: str) -> None:
        self.control("remove_device", device_id=device_id)

    def end_stream(self, error: str | None = None, *, code: str | grpc.StatusCode = "INTERNAL") -> int:
        """End every open ListAndWatch stream: cleanly, or with status `code` and message `error`.
        Returns how many streams were open."""
        return self.control("end_stream", error=error, code=code_name(code))["open_streams"]

    # -- serving and registration ---------------------------------------------------------------------

    def stop_serving(self, socket_name: str | None = None) -> None:
        """Close the gRPC server(s) and remove the socket(s); all when socket_name is None."""
        self.control("stop_serving", socket_name=socket_name)

    def start_serving(self, socket_name: str | None = None) -> None:
        if socket_name:
            self._socket_names.add(socket_name)
        self.control("start_serving", socket_name=socket_name)

    def register(
        self, socket_name: str | None = None, version: str | None = None, resource_name: str | None = None
    ) -> Registration:
        """Register now and return the outcome (the kubelet's error text in .error when rejected)."""
        if socket_name:
            self._socket_names.add(socket_name)
        answer = self.control("register", socket_name=socket_name, version=version, resource_name=resource_name)
        return registration_of(Call.from_dict(answer))

    def hold_registration(self, hold: bool = True) -> None:
        """Hold back automatic registration; hold_registration(False) makes the one owed, if any."""
        self.control("hold_registration", hold=hold)

    # -- observing ------------------------------------------------------------------------------------

    def wait_for_status(
        self, what: str, check: Callable[[dict[str, Any]], bool], *, timeout: float | None = None
    ) -> dict[str, Any]:
        """Wait until check(status()) holds, e.g. lambda s: s["registration_owed"]; returns that status."""

        def probe() -> dict[str, Any] | Pending:
            status = self.status()
            if check(status):
                return status
            shown = {k: status[k] for k in ("serving", "held", "registration_owed", "open_streams", "devices")}
            return Pending(f"status {shown}")

        return self.wait(what, probe, timeout)

    def allocations(self) -> list[list[list[str]]]:
        """Every Allocate call the kubelet made, in order: the device IDs of each container request in
        it (the IDs the kubelet chose; the response carries none)."""
        return [
            [list(request.get("devices_ids") or []) for request in call.request.get("container_requests") or []]
            for call in self.calls("Allocate")
        ]

    @staticmethod
    def _registration(call: Call) -> Registration:
        return registration_of(call)
