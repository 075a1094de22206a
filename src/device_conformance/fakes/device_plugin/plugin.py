"""The fake plugin itself: serving sockets, registering with the kubelet, and the control operations."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from device_conformance.fakes.common import cdi
from device_conformance.fakes.common.calls import Call, CallLog
from device_conformance.fakes.common.faults import Faults, Status, status_code
from device_conformance.fakes.device_plugin.config import DeviceConfig, DevicePluginConfig, cdi_env
from device_conformance.fakes.device_plugin.defect_registry import DEVICE_PLUGIN_DEFECTS
from device_conformance.fakes.device_plugin.registration import register
from device_conformance.fakes.device_plugin.server import PluginServer
from device_conformance.fakes.device_plugin.service import METHODS, REGISTER_METHOD, DevicePluginService
from device_conformance.fakes.device_plugin.state import DeviceState
from device_conformance.fakes.device_plugin.watcher import KubeletWatcher

log = logging.getLogger(__name__)


class FakeDevicePlugin:
    def __init__(self, config: DevicePluginConfig) -> None:
        self.config = config
        self.state = DeviceState(config.devices)
        self.faults = Faults([*METHODS, REGISTER_METHOD], api="DevicePlugin", outgoing_methods=[REGISTER_METHOD])
        DEVICE_PLUGIN_DEFECTS.preload(self.faults, config.defects)
        self.log = CallLog(config.call_log)
        # One lock for sockets and registration, so the watcher and the control channel take turns.
        self._lock = threading.RLock()
        self._servers: dict[str, PluginServer] = {}
        self._socket_name = config.socket_name
        self._version = config.api_version
        self._resource = config.resource_name
        self._want_registered = config.register_on_start
        self._held = config.hold_registration
        self._owed_while_held: str | None = None
        self._watcher = (
            KubeletWatcher(config.kubelet_socket_path, self._repair_sockets, self._auto_register)
            if config.auto_reregister
            else None
        )

    def start(self) -> None:
        """Write the CDI spec (if any), serve, then register: the kubelet dials us back inside Register."""
        if self.config.cdi_dir:
            devices = {d.id: [cdi_env(d.id)] for d in self.config.devices}
            cdi.write_spec(self.config.cdi_spec_path, cdi.spec(self.config.cdi_spec_kind, devices))
        self.serve()
        if self._want_registered and self._watcher:
            # Through the watcher, so a kubelet that is not answering yet is retried.
            self._watcher.owe("start")
            self._watcher.tick()
        elif self._want_registered:
            self._auto_register("start")
        if self._watcher:
            self._watcher.start()

    def shutdown(self) -> None:
        if self._watcher:
            self._watcher.stop()
        self.faults.clear()  # release held calls so the servers can stop quickly
        with self._lock:
            for server in self._servers.values():
                server.stop(grace=0)
        if self.config.cdi_dir:
            cdi.remove_spec(self.config.cdi_spec_path)
        self.log.close()

    # -- serving -------------------------------------------------------------------------------

    def serve(self, socket_name: str | None = None) -> dict[str, Any]:
        name = socket_name or self._socket_name
        with self._lock:
            if name not in self._servers:
                service = DevicePluginService(self.config, self.state, self.faults, self.log, name)
                self._servers[name] = PluginServer(self.config.socket_path(name), service)
            self._servers[name].start()
        return self.status()

    def stop_serving(self, socket_name: str | None = None) -> dict[str, Any]:
        """Stop one socket's server, or all of them; open streams end as cancelled."""
        with self._lock:
            for name, server in self._servers.items():
                if socket_name in (None, name):
                    server.stop()
        return self.status()

    def _repair_sockets(self) -> bool:
        repaired_registered = False
        with self._lock:
            for name, server in self._servers.items():
                if not server.socket_intact():
                    log.info("socket %s was deleted or replaced; serving it again", server.path)
                    server.stop(grace=0)
                    server.start()
                    repaired_registered |= name == self._socket_name
        return repaired_registered

    # -- registration --------------------------------------------------------------------------

    def register(
        self, socket_name: str | None = None, version: str | None = None, resource_name: str | None = None
    ) -> dict[str, Any]:
        """Register now (even while held). A new socket name is served first; older sockets keep
        serving until stop_serving(name). The version and resource name given stick for later re-registrations."""
        with self._lock:
            self._socket_name = socket_name or self._socket_name
            self._version = version or self._version
            self._resource = resource_name or self._resource
            self._want_registered, self._owed_while_held = True, None
            self.serve(self._socket_name)
            return asdict(self._register("control"))

    def hold_registration(self, hold: bool) -> dict[str, Any]:
        """While held, automatic registrations are remembered, not made; releasing makes the owed one."""
        with self._lock:
            self._held = hold
            owed, self._owed_while_held = (None, self._owed_while_held) if hold else (self._owed_while_held, None)
            if owed:
                self._register(f"released ({owed})")
        return self.status()

    def _auto_register(self, reason: str) -> bool:
        """Register if wanted and not held; False asks the watcher to retry (kubelet not answering)."""
        with self._lock:
            if not self._want_registered:
                return True
            if self._held:
                self._owed_while_held = reason
                return True
            call = self._register(reason)
            return call.ok or (call.error or {}).get("code") != "UNAVAILABLE"

    def _register(self, reason: str) -> Call:
        if "another-resource-first" in self.config.patterns:
            other, socket = self.config.other_resource
            self.serve(socket)
            register(
                self.config,
                self.log,
                self.faults,
                socket_name=socket,
                version=self._version,
                resource_name=other,
                reason=f"{reason}, another resource first",
            )
        return register(
            self.config,
            self.log,
            self.faults,
            socket_name=self._socket_name,
            version=self._version,
            resource_name=self._resource,
            reason=reason,
        )

    # -- control operations --------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        # No self._lock: status must answer while a Register (which holds it) is stuck in the kubelet.
        servers = list(self._servers.items())
        return {
            "pid": os.getpid(),
            "resource_name": self._resource,
            "socket_name": self._socket_name,
            "serving": sorted(name for name, server in servers if server.serving),
            "known_sockets": [server.path for _, server in servers],
            "held": self._held,
            "registration_owed": self._owed_while_held,
            "devices": [asdict(d) for d in self.state.devices()],
            "open_streams": self.state.open_streams(),
            "faults": self.faults.describe(),
        }

    def end_stream(self, error: str | None = None, code: str = "INTERNAL") -> dict[str, Any]:
        status = Status(status_code(code), error) if error is not None else None
        return {"open_streams": self.state.end_streams(status)}

    def ops(self) -> dict[str, Callable[..., Any]]:
        """The control channel's verbs; each returns something JSON-serialisable."""
        return {
            "ping": lambda: {"pid": os.getpid()},
            "status": self.status,
            "set_health": lambda device_id, healthy: self.state.set_health(device_id, healthy),
            "set_devices": lambda devices: self.state.set_devices(DeviceConfig.from_dict(d) for d in devices),
            "add_device": lambda device: self.state.add_device(DeviceConfig.from_dict(device)),
            "remove_device": lambda device_id: self.state.remove_device(device_id),
            "end_stream": self.end_stream,
            **self.faults.ops(),
            "stop_serving": self.stop_serving,
            "start_serving": self.serve,
            "register": self.register,
            "hold_registration": self.hold_registration,
        }
