"""ResourceSlices of a driver checked offline against the resource.k8s.io/v1 rules (staging/src/k8s.io/api/
resource/v1/types.go and pkg/apis/resource/validation/validation.go), written here from those rules.

The API server already rejects most malformed slices; what it cannot see is a pool whose slices disagree
(generations, resourceSliceCount) or a slice for the wrong node, so those are checked too.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SEMVER = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|[KMGTPE]i?|[numkMGTPE])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
ATTRIBUTE_KINDS = ("int", "bool", "string", "version")
TAINT_EFFECTS = ("NoSchedule", "NoExecute", "None")
NODE_SELECTION = ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection")
MAX_DEVICES_PER_SLICE = 128


def _subdomain(name: str, limit: int = 253) -> bool:
    return 0 < len(name) <= limit and bool(DNS_SUBDOMAIN.match(name))


def _qualified_key(key: str) -> bool:
    """An attribute or capacity name: optional DNS-subdomain domain, then a C identifier of at most 32."""
    domain, slash, name = key.rpartition("/")
    return (not slash or _subdomain(domain, 63)) and len(name) <= 32 and bool(C_IDENTIFIER.match(name))


def _device_problems(device: dict[str, Any], where: str) -> list[str]:
    problems = []
    name = device.get("name", "")
    if not isinstance(name, str) or len(name) > 63 or not DNS_LABEL.match(name):
        problems.append(f"{where}: device name {name!r} is not a DNS label")
    for key, value in (device.get("attributes") or {}).items():
        set_kinds = [k for k in ATTRIBUTE_KINDS if isinstance(value, dict) and k in value]
        if not _qualified_key(key):
            problems.append(f"{where} {name}: attribute name {key!r} is invalid")
        if len(set_kinds) != 1:
            problems.append(f"{where} {name}: attribute {key!r} must set exactly one of {ATTRIBUTE_KINDS}: {value!r}")
        elif set_kinds == ["string"] and len(str(value["string"])) > 64:
            problems.append(f"{where} {name}: attribute {key!r} string longer than 64")
        elif set_kinds == ["version"] and not SEMVER.match(str(value["version"])):
            problems.append(f"{where} {name}: attribute {key!r} version {value['version']!r} is not semver")
    for key, value in (device.get("capacity") or {}).items():
        if not _qualified_key(key):
            problems.append(f"{where} {name}: capacity name {key!r} is invalid")
        if not isinstance(value, dict) or not QUANTITY.match(str(value.get("value", ""))):
            problems.append(f"{where} {name}: capacity {key!r} value {value!r} is not a quantity")
    for taint in device.get("taints") or []:
        key = str(taint.get("key", ""))
        domain, slash, short = key.rpartition("/")
        if not short or len(short) > 63 or not LABEL_VALUE.match(short) or (slash and not _subdomain(domain)):
            problems.append(f"{where} {name}: taint key {key!r} is not a qualified name")
        if len(str(taint.get("value", ""))) > 63 or not LABEL_VALUE.match(str(taint.get("value", ""))):
            problems.append(f"{where} {name}: taint value {taint.get('value')!r} is not a label value")
        if taint.get("effect") not in TAINT_EFFECTS:
            problems.append(f"{where} {name}: taint effect {taint.get('effect')!r} not in {TAINT_EFFECTS}")
    return problems


def problems(slices: list[dict[str, Any]], driver: str, node_name: str | None) -> list[str]:
    """Everything wrong with a driver's slices; empty when they are valid."""
    found: list[str] = []
    pools: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for item in slices:
        meta, spec = item.get("metadata") or {}, item.get("spec") or {}
        where = f"slice {meta.get('name')!r}"
        if not _subdomain(str(meta.get("name", ""))):
            found.append(f"{where}: name is not a DNS subdomain")
        if spec.get("driver") != driver or not _subdomain(driver, 63):
            found.append(f"{where}: driver {spec.get('driver')!r}, expected {driver!r}")
        pool = spec.get("pool") or {}
        pool_name = str(pool.get("name", ""))
        if not pool_name or len(pool_name) > 253 or not all(_subdomain(p) for p in pool_name.split("/")):
            found.append(f"{where}: pool name {pool_name!r} is invalid")
        generation, count = pool.get("generation"), pool.get("resourceSliceCount")
        if not isinstance(generation, int) or generation < 0:
            found.append(f"{where}: pool generation {generation!r} is not a non-negative integer")
        if not isinstance(count, int) or count < 1:
            found.append(f"{where}: resourceSliceCount {count!r} is not a positive integer")
        if isinstance(generation, int) and isinstance(count, int):
            pools[pool_name].append((generation, count))
        selection = [k for k in NODE_SELECTION if spec.get(k)]
        if len(selection) != 1:
            found.append(f"{where}: exactly one of {NODE_SELECTION} must be set, got {selection}")
        if node_name and spec.get("nodeName") and spec["nodeName"] != node_name:
            found.append(f"{where}: nodeName {spec['nodeName']!r}, expected {node_name!r}")
        devices = spec.get("devices") or []
        if len(devices) > MAX_DEVICES_PER_SLICE:
            found.append(f"{where}: {len(devices)} devices, at most {MAX_DEVICES_PER_SLICE}")
        names = [d.get("name") for d in devices]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            found.append(f"{where}: device names {dupes} appear more than once")
        for device in devices:
            # v1beta1 nests a device's attributes, capacity and taints under `basic`; the name stays outside.
            found.extend(_device_problems({**device.get("basic", device), "name": device.get("name")}, where))
    for pool_name, entries in pools.items():
        newest = max(g for g, _ in entries)
        current = [c for g, c in entries if g == newest]
        if len(set(current)) != 1 or current[0] != len(current):
            found.append(
                f"pool {pool_name!r} generation {newest}: {len(current)} slice(s), resourceSliceCount says {current}"
            )
    return found


def list_slices(kubeconfig: str, driver: str, node_name: str | None) -> list[dict[str, Any]]:
    """The driver's ResourceSlices for node_name when given, in the newest version the API server serves of
    resource.k8s.io/v1 (1.34+), v1beta2 (1.33) and v1beta1 (1.32): an older one answers 404 for the newer."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))
    selectors = [f"spec.driver={driver}"] + ([f"spec.nodeName={node_name}"] if node_name else [])
    for version in ("v1", "v1beta2", "v1beta1"):
        try:
            listed = api.list_cluster_custom_object(
                "resource.k8s.io", version, "resourceslices", field_selector=",".join(selectors)
            )
        except ApiException as exc:
            if exc.status == 404 and version != "v1beta1":
                continue
            raise
        return list(listed.get("items") or [])
    return []
