"""ResourceSlices of a driver checked offline against the resource.k8s.io/v1 rules (staging/src/k8s.io/api/
resource/v1/types.go and pkg/apis/resource/validation/validation.go), written here from those rules.

The API server already rejects most malformed slices; what it cannot see is a pool whose slices disagree
(generations, resourceSliceCount) or a slice for the wrong node, so those are checked too.

NodeSliceReader reads the slices that serve a node as the scheduler decides it (staging/src/k8s.io/
dynamic-resource-allocation/structured/internal/stable/pools_stable.go GatherPools, nodeMatches;
certify/dra_slice_devices.py): spec.nodeName is the node, spec.allNodes, a spec.nodeSelector selecting the Node's
labels, or with spec.perDeviceNodeSelection one device's own nodeName, allNodes or nodeSelector (types.go
ResourceSliceSpec: exactly one of them). A slice whose answer depends on labels that cannot be read is not judged,
with a note. The slices are read in the newest resource.k8s.io version the API server serves (v1 from 1.34, v1beta2
from 1.33, v1beta1 from 1.32; certify/dra_claims.py newest_version).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from device_conformance.certify import dra_claims, node_selector
from device_conformance.certify.dra_auto_claims_api import api_error
from device_conformance.certify.dra_slice_devices import serves_node, slice_target

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


def problems(
    slices: list[dict[str, Any]],
    driver: str,
    node_name: str | None,
    pool_slices: list[dict[str, Any]] | None = None,
) -> list[str]:
    """Everything wrong with a driver's slices; empty when they are valid. `pool_slices`: all the driver's slices
    (default `slices`), to count the pools of `slices`: resourceSliceCount is "the total number of ResourceSlices in
    the pool at this generation number" (types.go ResourcePool), whatever nodes they serve."""
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
        pools.setdefault(pool_name, [])
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
    for item in slices if pool_slices is None else pool_slices:
        spec = item.get("spec") or {}
        pool = spec.get("pool") or {}
        generation, count = pool.get("generation"), pool.get("resourceSliceCount")
        name = str(pool.get("name", ""))
        if name in pools and isinstance(generation, int) and isinstance(count, int):
            pools[name].append((generation, count))
    for pool_name, entries in pools.items():
        if not entries:
            continue
        newest = max(g for g, _ in entries)
        current = [c for g, c in entries if g == newest]
        if len(set(current)) != 1 or current[0] != len(current):
            found.append(
                f"pool {pool_name!r} generation {newest}: {len(current)} slice(s), resourceSliceCount says {current}"
            )
    return found


# -- the slices serving a node ----------------------------------------------------------------------------------


class SliceApi(Protocol):
    """The API calls NodeSliceReader makes (dra_auto_claims_api.KubeApi; an in-memory fake in tests/certify)."""

    def resource_versions(self) -> list[str]: ...
    def node_labels(self, name: str) -> dict[str, str] | None: ...
    def list_slices(self, version: str, driver: str) -> list[dict[str, Any]]: ...
    def close(self) -> None: ...


def _selects(where: Mapping[str, Any], node: str) -> bool | None:
    """Whether a slice's spec or a device (its nodeName, allNodes, nodeSelector) selects the node without its
    labels: None when that depends on them (no term of matchFields alone selects the node and a term with
    matchExpressions may; core/v1 NodeSelectorTerm: expressions and fields ANDed, terms ORed; node_selector.py)."""
    if where.get("nodeName"):
        return where["nodeName"] == node
    if where.get("allNodes"):
        return True
    terms = (where.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    if node_selector.matches({"nodeSelectorTerms": [t for t in terms if not t.get("matchExpressions")]}, node, {}):
        return True
    # A term with matchExpressions is decided by the labels unless its matchFields already exclude the node.
    by_label = [t for t in terms if t.get("matchExpressions")]
    return None if any(_fields_match(t.get("matchFields") or [], node) for t in by_label) else False


def _fields_match(fields: list[dict[str, Any]], node: str) -> bool:
    return not fields or node_selector.matches({"nodeSelectorTerms": [{"matchFields": fields}]}, node, {})


def serves(item: dict[str, Any], node: str, labels: Mapping[str, str] | None) -> bool | None:
    """Whether a ResourceSlice offers the node anything (dra_slice_devices.serves_node); with labels None (the
    Node's labels unknown) None when the answer depends on them."""
    if labels is not None:
        return serves_node(item, node, dict(labels))
    spec = item.get("spec") or {}
    if spec.get("perDeviceNodeSelection"):
        # resource/v1beta1 holds a device's node selection under `basic` (BasicDevice).
        answers = [_selects(d.get("basic") or d, node) for d in spec.get("devices") or []]
    else:
        answers = [_selects(spec, node)]
    return True if True in answers else (None if None in answers else False)


@dataclass
class Reading:
    """One read of a driver's slices for a node."""

    judged: list[dict[str, Any]] = field(default_factory=list)  # the slices serving the node
    problems: list[str] = field(default_factory=list)  # what is wrong with them, or why none is there
    notes: list[str] = field(default_factory=list)  # slices not judged, and why
    # Why nothing could be judged (no resource.k8s.io served; only slices whose node the labels decide, unread).
    not_judged: str = ""


class NodeSliceReader:
    """Reads the driver's ResourceSlices serving `node` (every slice of the driver when node is None) and judges
    them (problems); `version` is the resource.k8s.io version read, once known."""

    def __init__(self, connect: Callable[[], SliceApi], driver: str, node: str | None) -> None:
        self._connect, self.driver, self.node = connect, driver, node
        self._api: SliceApi | None = None
        self._labels: dict[str, str] | None = None
        self.version: str | None = None

    def close(self) -> None:
        if self._api is not None:
            self._api.close()
            self._api = None

    def read(self) -> Reading:
        try:
            self._api = self._api or self._connect()
            if self.version is None:
                served = self._api.resource_versions()
                self.version = dra_claims.newest_version(served)
                if self.version is None:
                    what = f"only {sorted(served)}" if served else "no version"
                    return Reading(not_judged=f"the API server serves {what} of resource.k8s.io (DRA)")
            slices = self._api.list_slices(self.version, self.driver)
        except Exception as exc:
            return Reading(problems=[f"listing ResourceSlices failed: {api_error(exc)}"])
        if self.node is None:
            return self._judge(slices, slices, [])
        node = self.node
        answers = [serves(s, node, None) for s in slices]
        why_unread = ""
        if None in answers:  # some slice selects nodes by label: the Node's labels decide
            why_unread = self._read_labels(self._api, node)
            if self._labels is not None:
                answers = [serves(s, node, self._labels) for s in slices]
        serving = [s for s, a in zip(slices, answers, strict=True) if a]
        notes = [
            f"slice {(s.get('metadata') or {}).get('name')!r} ({slice_target(s)}) not judged: whether it serves "
            f"node {node} depends on the Node's labels, which could not be read ({why_unread})"
            for s, a in zip(slices, answers, strict=True)
            if a is None
        ]
        if not serving and notes:
            return Reading(
                notes=notes,
                not_judged=f"{len(notes)} slice(s) of {self.driver} select nodes by label "
                f"and node {node}'s labels could not be read ({why_unread})",
            )
        return self._judge(serving, slices, notes)

    def _judge(self, serving: list[dict[str, Any]], slices: list[dict[str, Any]], notes: list[str]) -> Reading:
        if not serving:
            where = f" for node {self.node}" if self.node else ""
            others = sorted({slice_target(s) for s in slices})
            elsewhere = f" (it has slices for {', '.join(others)})" if others else ""
            return Reading(problems=[f"no ResourceSlice of driver {self.driver}{where}{elsewhere}"])
        found = problems(serving, self.driver, self.node, pool_slices=slices)
        return Reading(judged=serving, problems=found, notes=notes)

    def _read_labels(self, api: SliceApi, node: str) -> str:
        """Reads the Node's labels once; why they could not be read, else ''."""
        if self._labels is not None:
            return ""
        try:
            labels = api.node_labels(node)
        except Exception as exc:
            return f"reading Node {node}: {api_error(exc)}"
        if labels is None:
            return f"node {node} is not in the API server"
        self._labels = labels
        return ""
