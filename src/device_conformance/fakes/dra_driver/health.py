"""DRAResourceHealth, v1 and v1alpha1: pushes the full device health list to every open stream on each change.

The two API versions have the same messages in another package (kubernetes#139477, CHANGELOG-1.37 v1.37.0-rc.0:
"the schema is unchanged from v1alpha1"), so one servicer serves either, over that version's generated code.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import grpc

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.calls import CallLog
from device_conformance.fakes.common.faults import Faults, Status
from device_conformance.fakes.common.rpc import Served, end_call
from device_conformance.fakes.dra_driver.config import HEALTH_NOT_SUPPORTED
from device_conformance.protos.drahealth.v1 import api_pb2 as v1_pb2
from device_conformance.protos.drahealth.v1 import api_pb2_grpc as v1_grpc
from device_conformance.protos.drahealth.v1alpha1 import api_pb2 as v1alpha1_pb2
from device_conformance.protos.drahealth.v1alpha1 import api_pb2_grpc as v1alpha1_grpc

# API version -> (messages, services), in the kubelet's order of preference (pkg/kubelet/cm/dra/plugin/dra_plugin.go
# healthServicesSupportedByKubelet, v1.37.0+).
APIS: dict[str, tuple[ModuleType, ModuleType]] = {
    "v1": (v1_pb2, v1_grpc),
    "v1alpha1": (v1alpha1_pb2, v1alpha1_grpc),
}
# The health values by name; the enum's numbers are the same in both versions.
HEALTH_VALUES = {"Unknown": v1_pb2.UNKNOWN, "Healthy": v1_pb2.HEALTHY, "Unhealthy": v1_pb2.UNHEALTHY}


def service_name(api: str) -> str:
    """The gRPC service, which is also the token a driver advertises at registration: v1.DRAResourceHealth
    (k8s.io/kubelet pkg/apis/dra-health/v1/types.go DRAResourceHealthService)."""
    return APIS[api][0].DESCRIPTOR.services_by_name["DRAResourceHealth"].full_name


class HealthHub:
    """Current health per device plus one queue per open stream."""

    def __init__(self, pool: str) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._devices: dict[str, dict[str, Any]] = {}
        self._streams: set[queue.Queue[list[dict[str, Any]]]] = set()

    def push(
        self, updates: dict[str, str], *, message: str = "", timeout_seconds: int = 0, partial: bool = False
    ) -> int:
        """Apply device -> Healthy/Unhealthy/Unknown and send the full list (partial: only the updated devices);
        returns the number of streams."""
        bad = {d: h for d, h in updates.items() if h not in HEALTH_VALUES}
        if bad:
            raise BadInput(f"unknown health values {bad}", f"use one of {list(HEALTH_VALUES)}")
        now = int(time.time())
        with self._lock:
            for device, health in updates.items():
                self._devices[device] = {
                    "health": health,
                    "message": message,
                    "timeout": timeout_seconds,
                    "time": now,
                }
            snapshot = self._snapshot_locked()
            report = [d for d in snapshot if d["device"] in updates] if partial else snapshot
            for q in self._streams:
                q.put(report)
            return len(self._streams)

    def describe(self) -> dict[str, Any]:
        with self._lock:
            return {"devices": dict(self._devices), "open_streams": len(self._streams)}

    def subscribe(self) -> tuple[queue.Queue[list[dict[str, Any]]], list[dict[str, Any]]]:
        q: queue.Queue[list[dict[str, Any]]] = queue.Queue()
        with self._lock:
            self._streams.add(q)
            return q, self._snapshot_locked()

    def unsubscribe(self, q: queue.Queue[list[dict[str, Any]]]) -> None:
        with self._lock:
            self._streams.discard(q)

    def _snapshot_locked(self) -> list[dict[str, Any]]:
        return [{"device": name, "pool": self._pool, **info} for name, info in sorted(self._devices.items())]


@dataclass(frozen=True)
class HealthAnswers:
    """How the fake answers NodeWatchResources besides its reports: declining every stream (pattern
    health-not-supported), or naming each device without its pool (defect health-report-unnamed-devices)."""

    declines: bool = False
    unnamed: bool = False


def to_response(snapshot: list[dict[str, Any]], pb: ModuleType = v1_pb2, *, unnamed: bool = False) -> Any:
    """The NodeWatchResourcesResponse of `snapshot` in the API version whose messages `pb` holds; `unnamed`: every
    device with an empty pool name."""
    return pb.NodeWatchResourcesResponse(
        devices=[
            pb.DeviceHealth(
                device=pb.DeviceIdentifier(pool_name="" if unnamed else d["pool"], device_name=d["device"]),
                health=HEALTH_VALUES[d["health"]],
                last_updated_time=d["time"],
                health_check_timeout_seconds=d["timeout"],
                message=d["message"],
            )
            for d in snapshot
        ]
    )


class HealthServicer:
    """NodeWatchResources of one API version (`served.service`), under the fake's fault table."""

    def __init__(self, hub: HealthHub, served: Served, pb: ModuleType, answers: HealthAnswers) -> None:
        self._hub = hub
        self._served = served
        self._pb = pb
        self._answers = answers

    def NodeWatchResources(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        # In flight while open: tests wait for the kubelet to connect.
        call = self._served.start("NodeWatchResources", request)
        self._served.admit(call, context)
        if self._answers.declines:
            end_call(self._served.log, call, context, Status("UNIMPLEMENTED", HEALTH_NOT_SUPPORTED))
        q, snapshot = self._hub.subscribe()
        sent = 0
        try:
            if snapshot:
                sent += 1
                yield to_response(snapshot, self._pb, unnamed=self._answers.unnamed)
            while context.is_active():
                try:
                    snapshot = q.get(timeout=0.2)
                except queue.Empty:
                    continue
                sent += 1
                yield to_response(snapshot, self._pb, unnamed=self._answers.unnamed)
        finally:
            self._hub.unsubscribe(q)
            self._served.log.finish(call, response={"sent": sent}, error={"code": "CANCELLED", "message": ""})


def add_to_server(
    hub: HealthHub,
    faults: Faults,
    calls: CallLog,
    server: grpc.Server,
    socket: str,
    apis: list[str],
    answers: HealthAnswers = HealthAnswers(),
) -> None:
    """Serve the health service in each API version of `apis` (keys of APIS), its calls logged in `calls` and
    subject to `faults` (method NodeWatchResources)."""
    for api in apis:
        pb, services = APIS[api]
        servicer = HealthServicer(hub, Served(calls, faults, service_name(api), socket), pb, answers)
        services.add_DRAResourceHealthServicer_to_server(servicer, server)
