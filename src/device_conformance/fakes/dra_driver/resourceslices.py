"""Pure builders for the ResourceSlice and DeviceClass bodies, per resource.k8s.io version.

v1alpha3/v1beta1 nest a device's attributes, capacity and taints under `basic`; v1beta2 and v1
put them on the device itself (staging/src/k8s.io/api/resource/v1beta1/types.go, BasicDevice).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from device_conformance.core.errors import BadInput
from device_conformance.fakes.dra_driver.config import DeviceSpec

GROUP = "resource.k8s.io"
_BASIC_SHAPE_VERSIONS = {"v1alpha3", "v1beta1"}
_ATTRIBUTE_KINDS = {"int", "bool", "string", "version", "ints", "bools", "strings", "versions"}


def split_api_version(api_version: str) -> tuple[str, str]:
    group, _, version = api_version.partition("/")
    if group != GROUP or not version:
        raise BadInput(f"unsupported API version {api_version!r}", f"use {GROUP}/<version>, e.g. {GROUP}/v1")
    return group, version


def slice_name(node_name: str, driver_name: str) -> str:
    """A stable name, so a restarted driver updates its slice instead of adding a second one."""
    name = re.sub(r"[^a-z0-9.-]", "-", f"{node_name}-{driver_name}".lower()).strip("-.")
    return name[:253]


def counter_slice_name(node_name: str, driver_name: str) -> str:
    """The pool's second slice, holding only its sharedCounters."""
    return f"{slice_name(node_name, driver_name)[:244]}-counters"


def _quantities(values: dict[str, str]) -> dict[str, dict[str, str]]:
    return {k: {"value": v} for k, v in values.items()}


def device_attribute(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):  # before int: bool is an int in Python
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str):
        return {"string": value}
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _ATTRIBUTE_KINDS:
        return dict(value)
    raise BadInput(
        f"cannot express {value!r} as a device attribute", f"use bool, int, str or one of {_ATTRIBUTE_KINDS}"
    )


def build_device(spec: DeviceSpec, api_version: str) -> dict[str, Any]:
    _, version = split_api_version(api_version)
    body: dict[str, Any] = {}
    if spec.attributes:
        body["attributes"] = {k: device_attribute(v) for k, v in spec.attributes.items()}
    if spec.capacity:
        body["capacity"] = {k: {"value": v} for k, v in spec.capacity.items()}
    if spec.taints:  # left out when empty: servers without DRADeviceTaints drop the field anyway
        body["taints"] = [dict(t) for t in spec.taints]
    if spec.allow_multiple_allocations:  # left out when false, like taints
        body["allowMultipleAllocations"] = True
    if spec.consumes_counters:  # DRAPartitionableDevices; in `basic` for v1beta1 like the other fields
        body["consumesCounters"] = [
            {"counterSet": name, "counters": _quantities(counters)} for name, counters in spec.consumes_counters.items()
        ]
    if version in _BASIC_SHAPE_VERSIONS:
        return {"name": spec.name, "basic": body}
    return {"name": spec.name, **body}


def build_resource_slice(
    *,
    driver: str,
    node_name: str,
    pool: str,
    generation: int,
    devices: Sequence[DeviceSpec],
    api_version: str,
    node_uid: str | None = None,
    slice_count: int = 1,
) -> dict[str, Any]:
    """The pool's device slice (the whole pool unless it has shared counters), owned by the Node like the
    upstream kubeletplugin helper does."""
    body = _slice_shell(slice_name(node_name, driver), driver, node_name, pool, generation, api_version, node_uid)
    body["spec"]["pool"]["resourceSliceCount"] = slice_count
    body["spec"]["devices"] = [build_device(d, api_version) for d in devices]
    return body


def build_pool_slices(
    *,
    driver: str,
    node_name: str,
    pool: str,
    generation: int,
    devices: Sequence[DeviceSpec],
    api_version: str,
    node_uid: str | None = None,
    shared_counters: dict[str, dict[str, str]] | None = None,
) -> list[dict[str, Any]]:
    """Every slice of the pool: the device slice, and with shared counters a second slice holding them
    ("Only one of Devices and SharedCounters can be set in a ResourceSlice", k8s.io/api v0.37.1
    resource/v1/types.go; validation.go refuses both in one slice), both counting resourceSliceCount 2."""
    count = 2 if shared_counters else 1
    slices = [
        build_resource_slice(
            driver=driver,
            node_name=node_name,
            pool=pool,
            generation=generation,
            devices=devices,
            api_version=api_version,
            node_uid=node_uid,
            slice_count=count,
        )
    ]
    if shared_counters:
        name = counter_slice_name(node_name, driver)
        counters = _slice_shell(name, driver, node_name, pool, generation, api_version, node_uid)
        counters["spec"]["pool"]["resourceSliceCount"] = count
        counters["spec"]["sharedCounters"] = [
            {"name": set_name, "counters": _quantities(values)} for set_name, values in shared_counters.items()
        ]
        slices.append(counters)
    return slices


def _slice_shell(
    name: str, driver: str, node_name: str, pool: str, generation: int, api_version: str, node_uid: str | None
) -> dict[str, Any]:
    split_api_version(api_version)
    metadata: dict[str, Any] = {"name": name}
    if node_uid:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": node_uid, "controller": True}
        ]
    return {
        "apiVersion": api_version,
        "kind": "ResourceSlice",
        "metadata": metadata,
        "spec": {
            "driver": driver,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
            "nodeName": node_name,
        },
    }


def build_device_class(
    driver: str, *, api_version: str = "resource.k8s.io/v1", name: str | None = None
) -> dict[str, Any]:
    """A DeviceClass selecting every device of the driver (same shape in every version)."""
    split_api_version(api_version)
    return {
        "apiVersion": api_version,
        "kind": "DeviceClass",
        "metadata": {"name": name or driver},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def same_content(existing: dict[str, Any], desired: dict[str, Any], *, with_generation: bool = False) -> bool:
    """True when the published slice already says what we want (server defaults aside; the pool generation
    too unless with_generation)."""
    same = _projection(existing.get("spec") or {}) == _projection(desired["spec"])
    if not with_generation:
        return same
    generation = (existing.get("spec") or {}).get("pool", {}).get("generation")
    return same and generation == desired["spec"]["pool"]["generation"]


def _projection(spec: dict[str, Any]) -> dict[str, Any]:
    # Only what we set, in either shape: timeAdded and other server-filled fields must not count.
    devices = []
    for dev in spec.get("devices") or []:
        body = dev.get("basic", dev)
        devices.append(
            {
                "name": dev.get("name"),
                "attributes": body.get("attributes") or {},
                "capacity": {k: (v or {}).get("value") for k, v in (body.get("capacity") or {}).items()},
                "taints": [(t.get("key"), t.get("value"), t.get("effect")) for t in body.get("taints") or []],
                "consumesCounters": [
                    (c.get("counterSet"), _values(c.get("counters"))) for c in body.get("consumesCounters") or []
                ],
            }
        )
    pool = spec.get("pool") or {}
    return {
        "driver": spec.get("driver"),
        "nodeName": spec.get("nodeName"),
        "pool": (pool.get("name"), pool.get("resourceSliceCount")),
        "devices": devices,
        "sharedCounters": [(c.get("name"), _values(c.get("counters"))) for c in spec.get("sharedCounters") or []],
    }


def _values(counters: dict[str, Any] | None) -> dict[str, Any]:
    return {k: (v or {}).get("value") for k, v in (counters or {}).items()}
