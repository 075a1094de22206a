"""The driver: wires the pieces together and owns the two gRPC servers (registrar, DRA service).

The methods named in ops() are the control-channel operations, so their arguments and results are
plain JSON values.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent import futures
from typing import Any

import grpc

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.calls import CallLog
from device_conformance.fakes.common.faults import Faults
from device_conformance.fakes.common.rpc import UnknownMethods
from device_conformance.fakes.common.sockets import remove_socket
from device_conformance.fakes.dra_driver import health, registration, service
from device_conformance.fakes.dra_driver.claims import ClaimPreparer
from device_conformance.fakes.dra_driver.config import DriverConfig
from device_conformance.fakes.dra_driver.defect_registry import DRA_DRIVER_DEFECTS
from device_conformance.fakes.dra_driver.kubeapi import KubeApi
from device_conformance.fakes.dra_driver.publisher import SlicePublisher
from device_conformance.fakes.dra_driver.state import DriverState

# Blocked calls and open health streams each hold a worker; the kubelet never has many at once.
MAX_WORKERS = 32
CLAIM_METHODS = ("NodePrepareResources", "NodeUnprepareResources")


def serve_unix(path: str, add: Callable[[grpc.Server], None]) -> grpc.Server:
    remove_socket(path)  # a stale socket from a SIGKILLed predecessor
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_WORKERS))
    add(server)
    server.add_insecure_port(f"unix:{path}")
    server.start()
    return server


def stop_server(server: grpc.Server, path: str) -> None:
    server.stop(grace=None).wait(5)  # cancels in-flight calls, like a crashed plugin
    remove_socket(path)  # the kubelet's plugin watcher reacts to the socket going away


class Driver:
    def __init__(self, config: DriverConfig) -> None:
        config.validate()
        self.config = config
        self.calls = CallLog(config.call_log)
        self.faults = Faults(
            [*CLAIM_METHODS, "GetInfo", "NodeWatchResources"], api="DRA driver", claim_methods=CLAIM_METHODS
        )
        DRA_DRIVER_DEFECTS.preload(self.faults, config.defects)  # those that are faults from the start
        self.state = DriverState(config.state_file)
        self.health = health.HealthHub(config.pool)
        if config.initial_health:
            self.health.push({d.name: config.initial_health for d in config.devices})
        self.kube = KubeApi(config.kubeconfig, config.resource_api_version) if config.kubeconfig else None
        self.preparer = ClaimPreparer(config, self.state, self.kube)
        self._lock = threading.RLock()
        self._registrar: grpc.Server | None = None
        self._dra: grpc.Server | None = None
        self.slices = SlicePublisher(config, self.kube)

    def start(self) -> None:
        for d in (self.config.registry_dir, self.config.plugin_dir, self.config.cdi_dir):
            if d:
                os.makedirs(d, exist_ok=True)
        self.preparer.write_static_specs()
        after_notify = "serve-after-notify" in self.config.patterns
        # Service before registrar, as the upstream helper does: the kubelet may dial right after GetInfo.
        if self.config.serve_dra_on_start and not after_notify:
            self.start_dra_service()
        if self.config.register_on_start:
            self.start_registrar()
        if self.config.publish_on_start and not after_notify:
            self._publish_in_background()

    def _publish_in_background(self) -> None:
        # In the background: a slow API server must not delay serving the kubelet (nor the handle's
        # readiness wait); status()["slices"] tells when it is done.
        if self.kube is not None:
            threading.Thread(target=self.slices.publish, name="publish-slices", daemon=True).start()

    def _registration_notified(self, status: Any) -> None:
        """Pattern serve-after-notify: serve and publish only once the kubelet confirmed the registration (it
        notifies every new registration socket: pkg/kubelet/pluginmanager/operationexecutor/
        operation_generator.go, GenerateRegisterPluginFunc -> notifyPlugin)."""
        if "serve-after-notify" not in self.config.patterns or not status.plugin_registered:
            return
        with self._lock:
            first = self._dra is None
            if self.config.serve_dra_on_start:
                self.start_dra_service()
        if first and self.config.publish_on_start:
            self._publish_in_background()

    def shutdown(self) -> None:
        """Clean exit: sockets go, ResourceSlices stay (the kubelet wipes them; suites assert that)."""
        self.stop_registrar()
        self.stop_dra_service()
        self.calls.close()

    # --- servers -------------------------------------------------------------------------------

    def start_registrar(self) -> dict[str, Any]:
        with self._lock:
            if self._registrar is None:
                servicer = registration.RegistrationServicer(
                    self.config, self.faults, self.calls, self._registration_notified
                )
                self._registrar = serve_unix(
                    self.config.registration_socket, lambda s: self._add_registrar(servicer, s)
                )
            return self.status()

    def _add_registrar(self, servicer: registration.RegistrationServicer, server: grpc.Server) -> None:
        registration.add_to_server(servicer, server)
        if self._one_socket:  # the DRA services on the registration socket too; GetInfo names no endpoint
            self._add_dra(server, os.path.basename(self.config.registration_socket))

    @property
    def _one_socket(self) -> bool:
        return "dra-on-registration-socket" in self.config.patterns

    def stop_registrar(self) -> dict[str, Any]:
        with self._lock:
            if self._registrar is not None:
                stop_server(self._registrar, self.config.registration_socket)
                self._registrar = None
            return self.status()

    def start_dra_service(self) -> dict[str, Any]:
        with self._lock:
            if self._dra is None and not self._one_socket:
                self._dra = serve_unix(self.config.service_socket, self._add_dra)
            return self.status()

    def stop_dra_service(self) -> dict[str, Any]:
        with self._lock:
            if self._dra is not None:
                stop_server(self._dra, self.config.service_socket)
                self._dra = None
            return self.status()

    def _add_dra(self, server: grpc.Server, socket: str = "") -> None:
        socket = socket or os.path.basename(self.config.service_socket)
        service.add_dra_services(server, self.preparer, self.faults, self.calls, socket)
        if self.config.health_service:
            answers = health.HealthAnswers(
                declines="health-not-supported" in self.config.patterns,
                unnamed="health-report-unnamed-devices" in self.config.defects,
            )
            health.add_to_server(self.health, self.faults, self.calls, server, socket, self.config.health_apis, answers)
        # Last: it answers (and logs) only what the services above do not serve.
        server.add_generic_rpc_handlers((UnknownMethods(self.calls, socket),))

    # --- health, devices, slices ---------------------------------------------------------------

    def push_health(
        self, updates: dict[str, str], message: str = "", timeout_seconds: int = 0, partial: bool = False
    ) -> int:
        if not self.config.health_service:
            raise BadInput("push_health on a driver without the health service", "set health_service=True")
        return self.health.push(updates, message=message, timeout_seconds=timeout_seconds, partial=partial)

    def set_devices(self, devices: list[dict[str, Any]]) -> dict[str, Any]:
        return self.slices.set_devices(devices)

    def set_taints(self, device: str, taints: list[dict[str, str]]) -> dict[str, Any]:
        return self.slices.set_taints(device, taints)

    def devices(self) -> list[dict[str, Any]]:
        return self.slices.devices()

    def publish_slices(self) -> dict[str, Any]:
        """Returns {published, error, generation, attempts[, name]}; the same is in status()["slices"]."""
        return self.slices.publish()

    # --- claims --------------------------------------------------------------------------------

    def push_allocation(self, claim_uid: str, namespace: str, name: str, results: list[dict[str, Any]]) -> None:
        """What the scheduler would have allocated; used only when there is no kubeconfig."""
        for r in results:
            if not r.get("device"):
                raise BadInput(f"allocation result {r!r} has no device", "give {'device': ..., 'request': ...}")
        self.state.set_allocation(claim_uid, {"namespace": namespace, "name": name, "results": results})

    def remove_allocation(self, claim_uid: str) -> None:
        self.state.drop_allocation(claim_uid)

    def prepared(self) -> dict[str, dict[str, Any]]:
        return self.state.prepared()

    # --- introspection and the control channel ---------------------------------------------------

    def ops(self) -> dict[str, Callable[..., Any]]:
        """The control channel's verbs; each returns something JSON-serialisable."""
        return {
            "ping": lambda: {"pid": os.getpid()},
            "status": self.status,
            **self.faults.ops(),
            "start_registrar": self.start_registrar,
            "stop_registrar": self.stop_registrar,
            "start_dra_service": self.start_dra_service,
            "stop_dra_service": self.stop_dra_service,
            "push_health": self.push_health,
            "set_devices": self.set_devices,
            "set_taints": self.set_taints,
            "devices": self.devices,
            "publish_slices": self.publish_slices,
            "push_allocation": self.push_allocation,
            "remove_allocation": self.remove_allocation,
            "prepared": self.prepared,
        }

    def status(self) -> dict[str, Any]:
        with self._lock:
            return {
                "pid": os.getpid(),
                "registrar_running": self._registrar is not None,
                "dra_service_running": self._dra is not None or (self._one_socket and self._registrar is not None),
                "slices": self.slices.describe(),
                "faults": self.faults.describe(),
                "health": self.health.describe(),
            }
