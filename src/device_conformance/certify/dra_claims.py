"""The --claims input of `certify dra-driver`, checked against the API server before anything starts.

A claim that was replaced since (same name, other UID) or is not allocated to this driver and node cannot be
prepared by any driver: upstream's kubeletplugin helper refuses it (k8s.io/dynamic-resource-allocation
kubeletplugin/draplugin.go, nodePluginImplementation.getResourceClaims: "claim %s/%s not allocated",
"claim %s/%s got replaced"). Judging that as the driver's FAIL would be wrong: it is the user's input.

--claims FILE holds either entries {namespace, name, uid[, devices]} or ResourceClaim objects as `kubectl get
resourceclaim -o yaml` prints them (one, a List, or several YAML documents), in resource.k8s.io v1, v1beta2 or
v1beta1: an object is checked by itself as the API server's would be, and its allocated devices are read from
it. The API server is read in the newest of those versions it serves (1.32 serves v1beta1 only, 1.33 also
v1beta2, 1.34+ also v1). The versions differ in how a request names its class (staging/src/k8s.io/api/resource/
v1beta1/types.go DeviceRequest.DeviceClassName and FirstAvailable; v1beta2 and v1 types.go DeviceRequest.Exactly
and FirstAvailable), not in status.allocation (AllocationResult.Devices.Results: request, driver, pool, device;
NodeSelector), which is what is checked here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from device_conformance.certify import node_selector
from device_conformance.core.errors import BadInput
from device_conformance.fakes.dra_driver.kubelet_client import Claim

ReadClaim = Callable[[str, str], dict[str, Any] | None]  # (namespace, name) -> ResourceClaim or None (404)
ReadNodeLabels = Callable[[str], dict[str, str] | None]  # node name -> its labels, or None (404)

GROUP = "resource.k8s.io"
# The resource.k8s.io versions a ResourceClaim is read in, newest first.
VERSIONS = ("v1", "v1beta2", "v1beta1")

FIX = (
    "list the claims allocated to this driver and node with their current UIDs "
    "(kubectl get resourceclaims -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,"
    "UID:.metadata.uid,ALLOCATED:.status.allocation.devices.results[*].device) and write those into --claims"
)
FIX_FILE = (
    "give a list of {namespace, name, uid[, devices]} entries, or ResourceClaim objects of resource.k8s.io v1, "
    "v1beta2 or v1beta1 allocated to this driver and node (kubectl get resourceclaim -n NS NAME -o yaml)"
)
FIX_API = (
    "use a cluster that serves resource.k8s.io v1 (Kubernetes 1.34+), v1beta2 or v1beta1 (1.32/1.33 with the "
    "DynamicResourceAllocation feature gate), or certify without --kubeconfig"
)


def newest_version(served: list[str]) -> str | None:
    """The newest of VERSIONS in `served` (resource.k8s.io versions, e.g. ["v1beta1", "v1beta2"]), or None."""
    return next((v for v in VERSIONS if v in served), None)


def request_names(obj: dict[str, Any]) -> set[str] | None:
    """The names an allocation result's `request` may have for this claim: each request's, and
    `<request>/<subrequest>` for each of its firstAvailable subrequests (types.go DeviceRequestAllocationResult.
    Request); None when the object carries no spec.devices.requests. The same in every version: v1beta1 names
    the class on the request itself, v1beta2 and v1 under `exactly`, and all three list subrequests under
    `firstAvailable`."""
    requests = ((obj.get("spec") or {}).get("devices") or {}).get("requests")
    if not requests:
        return None
    names: set[str] = set()
    for request in requests:
        name = str(request.get("name", ""))
        names.add(name)
        names.update(f"{name}/{sub.get('name')}" for sub in request.get("firstAvailable") or [])
    return names


def claim_problems(
    claim: Claim,
    obj: dict[str, Any] | None,
    driver: str,
    node: str | None,
    devices: list[str] | None = None,
    labels: dict[str, str] | None = None,
) -> list[str]:
    """What is wrong with one --claims entry given the ResourceClaim the API server holds (None: not found).
    `labels`: the node's labels, to judge an allocation whose nodeSelector selects by label (from a ResourceSlice
    with a nodeSelector or allNodes); without them only one naming nodes by metadata.name is judged."""
    namespace, uid, name = claim
    where = f"claim {namespace}/{name}"
    if obj is None:
        return [f"{where} does not exist in the API server"]
    actual = (obj.get("metadata") or {}).get("uid")
    if actual != uid:
        return [f"{where} was replaced: --claims has UID {uid}, the API server has {actual}"]
    allocation = (obj.get("status") or {}).get("allocation")
    if not allocation:
        return [f"{where} is not allocated"]
    all_results = (allocation.get("devices") or {}).get("results") or []
    results = [r for r in all_results if r.get("driver") == driver]
    if not results:
        others = sorted({str(r.get("driver")) for r in all_results})
        held = f" (only from {others})" if others else ""
        return [f"{where} has no devices allocated from driver {driver}{held}"]
    problems = []
    # AllocationResult.NodeSelector: "If unset, they are available everywhere" (network-attached devices).
    selector = allocation.get("nodeSelector")
    nodes = node_selector.node_names(selector)
    if node and nodes is not None and node not in nodes:
        problems.append(f"{where} is allocated for node(s) {nodes}, not {node}")
    elif (
        node and selector and nodes is None and labels is not None and not node_selector.matches(selector, node, labels)
    ):
        problems.append(f"{where} is allocated for nodes matching {selector}, which node {node} does not match")
    known = request_names(obj)
    unknown = sorted({str(r.get("request")) for r in results} - known) if known is not None else []
    if unknown:
        problems.append(f"{where}: allocation results name request(s) {unknown} the claim does not have")
    got = sorted(str(r.get("device")) for r in results)
    if devices is not None and sorted(devices) != got:
        problems.append(f"{where}: --claims lists devices {sorted(devices)}, the allocation has {got}")
    return problems


def check_claims(
    claims: list[Claim],
    allocated: dict[str, list[str]],
    driver: str,
    node: str | None,
    read: ReadClaim,
    node_labels: ReadNodeLabels | None = None,
) -> None:
    """BadInput naming every bad --claims entry, or nothing when all can be prepared by this driver here."""
    labels = node_labels(node) if node and node_labels else None
    problems = [
        p for c in claims for p in claim_problems(c, read(c[0], c[2]), driver, node, allocated.get(c[1]), labels)
    ]
    if problems:
        raise BadInput("--claims: " + "; ".join(problems), FIX)


# -- --claims FILE ----------------------------------------------------------------------------------------------


def _entries(data: Any) -> list[Any]:
    """The entries of the file's documents: lists and Lists (kind *List, `items`) flattened, empty ones dropped."""
    entries: list[Any] = []
    for doc in data:
        if doc is None:
            continue
        if isinstance(doc, list):
            entries += _entries(doc)
        elif isinstance(doc, dict) and "items" in doc and str(doc.get("kind", "List")).endswith("List"):
            entries += _entries(doc.get("items") or [])
        else:
            entries.append(doc)
    return entries


def _from_object(obj: dict[str, Any], driver: str, node: str | None) -> tuple[Claim, list[str], list[str]]:
    """A ResourceClaim object: its claim, the devices allocated from `driver`, and what is wrong with it."""
    api_version, kind = str(obj.get("apiVersion", "")), obj.get("kind")
    group, _, version = api_version.partition("/")
    meta = obj.get("metadata") or {}
    claim = (str(meta.get("namespace", "")), str(meta.get("uid", "")), str(meta.get("name", "")))
    where = f"{kind} {claim[0]}/{claim[2]}"
    if kind != "ResourceClaim" or group != GROUP or version not in VERSIONS:
        return claim, [], [f"{where} ({api_version}) is not a ResourceClaim of {GROUP} {'/'.join(VERSIONS)}"]
    missing = [f"metadata.{f}" for f, v in zip(("namespace", "uid", "name"), claim, strict=True) if not v]
    if missing:
        return claim, [], [f"{where} has no {', '.join(missing)}"]
    results = (((obj.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    devices = [str(r.get("device")) for r in results if r.get("driver") == driver]
    return claim, devices, claim_problems(claim, obj, driver, node)


def load_file(path: str, driver: str, node: str | None = None) -> tuple[list[Claim], dict[str, list[str]]]:
    """--claims FILE (JSON or YAML): (claims, UID -> allocated device names). ResourceClaim objects are checked
    against `driver` and `node` as the API server's would be (one BadInput naming every problem)."""
    import yaml

    try:
        entries = _entries(yaml.safe_load_all(Path(path).read_text()))
    except (OSError, yaml.YAMLError) as exc:
        raise BadInput(f"--claims {path}: {exc}", FIX_FILE) from exc
    claims: list[Claim] = []
    allocated: dict[str, list[str]] = {}
    problems: list[str] = []
    for n, entry in enumerate(entries, 1):
        if isinstance(entry, dict) and ("apiVersion" in entry or "kind" in entry):
            claim, devices, wrong = _from_object(entry, driver, node)
            problems += wrong
        else:
            try:
                claim = (str(entry["namespace"]), str(entry["uid"]), str(entry["name"]))
                devices = [str(d) for d in entry.get("devices") or []]
            except (TypeError, KeyError, AttributeError) as exc:
                problems.append(f"entry {n} is neither a ResourceClaim nor {{namespace, name, uid}} ({exc!r})")
                continue
        claims.append(claim)
        if devices:
            allocated[claim[1]] = devices
    if not claims and not problems:
        problems.append("it names no claim")
    if problems:
        raise BadInput(f"--claims {path}: " + "; ".join(problems), FIX_FILE)
    return claims, allocated


# -- the API server -------------------------------------------------------------------------------------------


def api_reader(kubeconfig: str) -> ReadClaim:
    """Reads ResourceClaims in the newest resource.k8s.io version the API server serves, with CustomObjectsApi
    (which works for resource.k8s.io objects with the kubernetes client 37, whose typed API is a rewrite).
    BadInput when it serves none of VERSIONS: a 404 there would read as "the claim does not exist"."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    api_client = config.new_client_from_config(config_file=kubeconfig)
    try:
        groups = client.ApisApi(api_client).get_api_versions(_request_timeout=30).groups or []
    except Exception as exc:
        raise BadInput(f"--claims: the API server of --kubeconfig {kubeconfig} does not answer ({exc})", FIX) from exc
    version = newest_version([v.version for g in groups if g.name == GROUP for v in g.versions or []])
    if version is None:
        served = sorted(v.version for g in groups if g.name == GROUP for v in g.versions or [])
        what = f"only {served}" if served else "no version"
        raise BadInput(f"--claims: the API server serves {what} of {GROUP} (DRA)", FIX_API)
    api = client.CustomObjectsApi(api_client)

    def read(namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return dict(api.get_namespaced_custom_object(GROUP, version, namespace, "resourceclaims", name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise BadInput(f"--claims: reading ResourceClaim {namespace}/{name}: HTTP {exc.status}", FIX) from exc

    return read


def node_labels_reader(kubeconfig: str) -> ReadNodeLabels:
    """The labels of a Node; None when it cannot be read (then only allocations naming nodes by metadata.name
    are judged, as before)."""
    from kubernetes import client, config

    core = client.CoreV1Api(config.new_client_from_config(config_file=kubeconfig))

    def read(name: str) -> dict[str, str] | None:
        try:
            return dict(core.read_node(name, _request_timeout=30).metadata.labels or {})
        except Exception:
            return None

    return read
