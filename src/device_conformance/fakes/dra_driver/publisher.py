"""The node's device list and its ResourceSlice: every change bumps the pool generation and re-publishes."""

from __future__ import annotations

import copy
import dataclasses
import sys
import threading
import traceback
from typing import Any

from device_conformance.errors import BadInput
from device_conformance.fakes.dra_driver.config import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.kubeapi import KubeApi
from device_conformance.fakes.dra_driver.resourceslices import build_resource_slice


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
                    published = self.kube.publish_slice(self._body(self.kube, generation, devices))
                    # The server may hold a higher generation (a predecessor's): continue from there.
                    generation = published["spec"]["pool"]["generation"]
                    result = {"published": True, "error": None, "name": published["metadata"]["name"]}
                except Exception as exc:  # the gRPC side keeps serving; tests read the error from status()
                    traceback.print_exc(file=sys.stderr)
                    result["error"] = repr(exc)
            with self._lock:
                self._generation = generation
                attempts = self._last["attempts"] + (self.kube is not None)
                self._last = {**result, "attempts": attempts}
                return dict(self._last, generation=generation)

    def _body(self, kube: KubeApi, generation: int, devices: list[DeviceSpec]) -> dict[str, Any]:
        return build_resource_slice(
            driver=self._config.driver_name,
            node_name=self._config.node_name,
            pool=self._config.pool,
            generation=generation,
            devices=devices,
            api_version=self._config.resource_api_version,
            node_uid=kube.node_uid(self._config.node_name),
        )
