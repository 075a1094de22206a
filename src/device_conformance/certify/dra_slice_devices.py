"""Which devices of a DRA driver's ResourceSlices a node can be allocated, and the nodeSelector the allocation
gets, as the scheduler decides them: for `--claims auto` (certify/dra_auto_claims.py).

A device is available to the node as in staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/
pools_stable.go (GatherPools, nodeMatches): its slice's spec.nodeName is the node, spec.allNodes is true, or
spec.nodeSelector selects the node (its labels; certify/node_selector.py); with spec.perDeviceNodeSelection (1.34+)
the device's own nodeName, allNodes or nodeSelector decides (staging/src/k8s.io/api/resource/v1/types.go
ResourceSliceSpec and Device; resource/v1beta1 holds a device's fields under `basic`, BasicDevice). The
allocation's nodeSelector is allocator_stable.go createNodeSelector's for one device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from device_conformance.certify import node_selector


@dataclass(frozen=True, order=True)
class Device:
    pool: str
    name: str


def _fields(device: dict[str, Any]) -> dict[str, Any]:
    # v1beta1 nests a device's attributes, capacity, taints and node selection under `basic` (k8s.io/api
    # resource/v1beta1 types.go BasicDevice); v1beta2 and v1 have them on the device.
    return device.get("basic") or device


def _taints(device: dict[str, Any]) -> list[dict[str, Any]]:
    return list(_fields(device).get("taints") or [])


def _selection(where: dict[str, Any]) -> tuple[str, bool, dict[str, Any] | None]:
    """(nodeName, allNodes, nodeSelector) of a slice's spec or a device: how it names the nodes it serves."""
    return str(where.get("nodeName") or ""), bool(where.get("allNodes")), where.get("nodeSelector")


def _serves(selection: tuple[str, bool, dict[str, Any] | None], node: str, labels: dict[str, str]) -> bool:
    """Whether the node gets devices so selected (pools_stable.go nodeMatches: nodeName, else allNodes, else
    the nodeSelector)."""
    name, all_nodes, selector = selection
    if name:
        return name == node
    return all_nodes or (selector is not None and node_selector.matches(selector, node, labels))


def allocation_node_selector(selection: tuple[str, bool, dict[str, Any] | None]) -> dict[str, Any] | None:
    """AllocationResult.NodeSelector for one device as the scheduler writes it (allocator_stable.go
    createNodeSelector): metadata.name In [nodeName] for a node-local device; the one term of a nodeSelector,
    its requirements without duplicates; none for allNodes ("If unset, they are available everywhere")."""
    name, _, selector = selection
    if name:
        return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}
    terms = (selector or {}).get("nodeSelectorTerms") or []
    if len(terms) != 1:
        return None
    term: dict[str, list[dict[str, Any]]] = {}
    for kind in ("matchFields", "matchExpressions"):
        for requirement in terms[0].get(kind) or []:
            if not any(_same_requirement(requirement, r) for r in term.get(kind, [])):
                term.setdefault(kind, []).append(requirement)
    return {"nodeSelectorTerms": [term]} if term else None


def _same_requirement(a: dict[str, Any], b: dict[str, Any]) -> bool:
    # allocator_stable.go containsNodeSelectorRequirement: key, operator and the set of values.
    same = a.get("key") == b.get("key") and a.get("operator") == b.get("operator")
    return same and set(a.get("values") or []) == set(b.get("values") or [])


def available_devices(
    slices: list[dict[str, Any]], driver: str, node: str, labels: dict[str, str] | None = None
) -> tuple[dict[Device, dict[str, Any] | None], list[str]]:
    """The driver's devices available to `node` (labels: the Node's) in complete pools, each with the nodeSelector
    its allocation gets (allocation_node_selector), and why others were left out. A pool counts in its newest
    generation, complete once all its resourceSliceCount slices are seen, whatever nodes they serve (the
    allocator uses no other: pools_stable.go GatherPools, addSlice)."""
    labels = labels or {}
    pools: dict[str, list[dict[str, Any]]] = {}
    for item in slices:
        spec = item.get("spec") or {}
        if spec.get("driver") == driver:
            pools.setdefault(str((spec.get("pool") or {}).get("name", "")), []).append(spec)
    devices: dict[Device, dict[str, Any] | None] = {}
    skipped: list[str] = []
    for pool, specs in sorted(pools.items()):
        newest = max(int((s.get("pool") or {}).get("generation") or 0) for s in specs)
        current = [s for s in specs if int((s.get("pool") or {}).get("generation") or 0) == newest]
        offered = [(spec, d) for spec in current for d in spec.get("devices") or [] if _offers(spec, d, node, labels)]
        if not offered:
            continue
        wanted = int((current[0].get("pool") or {}).get("resourceSliceCount") or 1)
        if len(current) < wanted:
            skipped.append(f"pool {pool}: {len(current)} of {wanted} slices published so far")
            continue
        for spec, device in offered:
            name = str(device.get("name"))
            selection = _selection(_fields(device) if spec.get("perDeviceNodeSelection") else spec)
            terms = ((selection[2] or {}).get("nodeSelectorTerms") or []) if not selection[0] else []
            # The scheduler allocates no device with a NoSchedule or NoExecute taint the claim does not
            # tolerate (k8s.io/api resource/v1 DeviceTaint.Effect).
            effects = sorted({t.get("effect") for t in _taints(device)} & {"NoSchedule", "NoExecute"})
            if effects:
                skipped.append(f"{pool}/{name}: tainted {effects}")
            elif len(terms) > 1:
                # Validation allows one term (ResourceSliceSpec.NodeSelector); the allocator refuses more
                # (createNodeSelector: "unsupported ResourceSlice.NodeSelector with %d terms").
                skipped.append(f"{pool}/{name}: a nodeSelector with {len(terms)} terms")
            else:
                devices[Device(pool, name)] = allocation_node_selector(selection)
    return dict(sorted(devices.items())), skipped


def _offers(spec: dict[str, Any], device: dict[str, Any], node: str, labels: dict[str, str]) -> bool:
    """Whether the slice offers the device to the node: by the slice's own selection, or with
    perDeviceNodeSelection by the device's."""
    if spec.get("perDeviceNodeSelection"):
        return _serves(_selection(_fields(device)), node, labels)
    return _serves(_selection(spec), node, labels)


def node_devices(
    slices: list[dict[str, Any]], driver: str, node: str, labels: dict[str, str] | None = None
) -> tuple[list[Device], list[str]]:
    """The devices of available_devices, sorted, and why others were left out."""
    devices, skipped = available_devices(slices, driver, node, labels)
    return sorted(devices), skipped


def serves_node(item: dict[str, Any], node: str, labels: dict[str, str]) -> bool:
    """Whether a ResourceSlice offers the node anything: by its own selection, or with perDeviceNodeSelection
    one of its devices by the device's."""
    spec = item.get("spec") or {}
    if spec.get("perDeviceNodeSelection"):
        return any(_serves(_selection(_fields(d)), node, labels) for d in spec.get("devices") or [])
    return _serves(_selection(spec), node, labels)


def slice_target(item: dict[str, Any]) -> str:
    """What nodes a slice serves, for messages: `node X`, `all nodes`, `nodes matching {...}`, `per device`."""
    spec = item.get("spec") or {}
    name, all_nodes, selector = _selection(spec)
    if spec.get("perDeviceNodeSelection"):
        return "per device"
    if name:
        return f"node {name}"
    return "all nodes" if all_nodes else f"nodes matching {selector}"


def used_devices(claims: list[dict[str, Any]], driver: str) -> set[Device]:
    """Devices of the driver that some claim's allocation already holds (the scheduler gives them no other)."""
    return {
        Device(str(r.get("pool")), str(r.get("device")))
        for claim in claims
        for r in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
        if r.get("driver") == driver
    }
