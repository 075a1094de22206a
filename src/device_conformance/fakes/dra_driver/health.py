"""v1alpha1.DRAResourceHealth: pushes the full device health list to every open stream on each change."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.calls import CallLog
from device_conformance.fakes.common.rpc import to_dict
from device_conformance.protos.drahealth.v1alpha1 import api_pb2, api_pb2_grpc

SERVICE = api_pb2.DESCRIPTOR.services_by_name["DRAResourceHealth"].full_name
HEALTH_VALUES = {"Unknown": api_pb2.UNKNOWN, "Healthy": api_pb2.HEALTHY, "Unhealthy": api_pb2.UNHEALTHY}


class HealthHub:
    """Current health per device plus one queue per open stream."""

    def __init__(self, pool: str) -> None:
        self._pool = pool
        self._lock = threading.Lock()
        self._devices: dict[str, dict[str, Any]] = {}
        self._streams: set[queue.Queue[list[dict[str, Any]]]] = set()

    def push(self, updates: dict[str, str], *, message: str = "", timeout_seconds: int = 0) -> int:
        """Apply device -> Healthy/Unhealthy/Unknown and send the full list; returns the number of streams."""
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
            for q in self._streams:
                q.put(snapshot)
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


def to_response(snapshot: list[dict[str, Any]]) -> api_pb2.NodeWatchResourcesResponse:
    return api_pb2.NodeWatchResourcesResponse(
        devices=[
            api_pb2.DeviceHealth(
                device=api_pb2.DeviceIdentifier(pool_name=d["pool"], device_name=d["device"]),
                health=HEALTH_VALUES[d["health"]],
                last_updated_time=d["time"],
                health_check_timeout_seconds=d["timeout"],
                message=d["message"],
            )
            for d in snapshot
        ]
    )


class HealthServicer(api_pb2_grpc.DRAResourceHealthServicer):
    def __init__(self, hub: HealthHub, calls: CallLog, socket: str) -> None:
        self._hub = hub
        self._calls = calls
        self._socket = socket

    def NodeWatchResources(
        self, request: api_pb2.NodeWatchResourcesRequest, context: grpc.ServicerContext
    ) -> Iterator[api_pb2.NodeWatchResourcesResponse]:
        # In flight while open: tests wait for the kubelet to connect.
        call = self._calls.start("NodeWatchResources", to_dict(request), service=SERVICE, socket=self._socket)
        q, snapshot = self._hub.subscribe()
        sent = 0
        try:
            if snapshot:
                sent += 1
                yield to_response(snapshot)
            while context.is_active():
                try:
                    snapshot = q.get(timeout=0.2)
                except queue.Empty:
                    continue
                sent += 1
                yield to_response(snapshot)
        finally:
            self._hub.unsubscribe(q)
            self._calls.finish(call, response={"sent": sent}, error={"code": "CANCELLED", "message": ""})


def add_to_server(hub: HealthHub, calls: CallLog, server: grpc.Server, socket: str) -> None:
    api_pb2_grpc.add_DRAResourceHealthServicer_to_server(HealthServicer(hub, calls, socket), server)
