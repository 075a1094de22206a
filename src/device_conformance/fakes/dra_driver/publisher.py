"""The node's device list and its ResourceSlice: every change bumps the pool generation and re-publishes."""

from __future__ import annotations

import copy
import dataclasses
import sys
import threading
import traceback
from typing import Any

from device_conformance.core.errors import BadInput
from device_conformance.fakes.dra_driver.config import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.kubeapi import KubeApi
from device_conformance.fakes.dra_driver.resourceslices import build_pool_slices


class SlicePublisher:
    """Without a KubeApi only the generation moves, so unit tests can still follow changes."""

    def __init__(self, config: DriverConfig, kube: KubeApi | None) -> None:
        self._config = config
        self.kube = kube
        self._lock = threading.Lock()  # devices and results; never held during API calls
        self._publishing = threading.Lock()  # one publish at a time, in order
        self._devices = copy.deepcopy(config.devices)
        self._generation = 0
        self._last: dict[str, Any] = {"published": False, "error": None, "attempts": 0}

    def devices(self) -> list[dict[str, Any]]:
        with self._lock:
            return [dataclasses.asdict(d) for d in self._devices]

    def set_devices(self, devices: list[dict[str, Any]]) -> dict[str, Any]:
        with self._lock:
            self._devices = [DeviceSpec.from_dict(d) for d in devices]
        return self.publish(changed=True)

    def set_taints(self, device: str, taints: list[dict[str, str]]) -> dict[str, Any]:
        with self._lock:
            match = [d for d in self._devices if d.name == device]
            if not match:
                raise BadInput(f"no device {device!r}", f"use one of {[d.name for d in self._devices]}")
            match[0].taints = [dict(t) for t in taints]
        return self.publish(changed=True)

    def describe(self) -> dict[str, Any]:
        """{published, error, generation, attempts[, name]} of the latest publish."""
        with self._lock:
            return dict(self._last, generation=self._generation)

    def publish(self, changed: bool = False) -> dict[str, Any]:
        with self._publishing:
            with self._lock:
                if changed or self._generation == 0:
                    self._generation += 1
                generation, devices = self._generation, copy.deepcopy(self._devices)
            result: dict[str, Any] = {"published": False, "error": None}
            if self.kube is not None:
                try:
                    published = self._publish_pool(self.kube, generation, devices)
                    # The server may hold a higher generation (a predecessor's): continue from there.
                    generation = published[0]["spec"]["pool"]["generation"]
                    names = [p["metadata"]["name"] for p in published]
                    result = {"published": True, "error": None, "name": names[0], "names": names}
                except Exception as exc:  # the gRPC side keeps serving; tests read the error from status()
                    traceback.print_exc(file=sys.stderr)
                    result["error"] = repr(exc)
            with self._lock:
                self._generation = generation
                attempts = self._last["attempts"] + (self.kube is not None)
                self._last = {**result, "attempts": attempts}
                return dict(self._last, generation=generation)

    def _publish_pool(self, kube: KubeApi, generation: int, devices: list[DeviceSpec]) -> list[dict[str, Any]]:
        """Every slice of the pool, at one generation: consumers use only the slices of a pool's highest
        generation (ResourcePool.generation, k8s.io/api v0.37.1 resource/v1/types.go)."""
        node_uid = kube.node_uid(self._config.node_name)
        published = [kube.publish_slice(body) for body in self._bodies(generation, devices, node_uid)]
        generations = {p["spec"]["pool"]["generation"] for p in published}
        if len(generations) > 1:  # one slice changed (bumped) and another did not: bring all to the highest
            bodies = self._bodies(max(generations), devices, node_uid)
            published = [kube.publish_slice(body, exact_generation=True) for body in bodies]
        return published

    def _bodies(self, generation: int, devices: list[DeviceSpec], node_uid: str | None) -> list[dict[str, Any]]:
        return build_pool_slices(
            driver=self._config.driver_name,
            node_name=self._config.node_name,
            pool=self._config.pool,
            generation=generation,
            devices=devices,
            api_version=self._config.resource_api_version,
            node_uid=node_uid,
            shared_counters=self._config.shared_counters,
        )
