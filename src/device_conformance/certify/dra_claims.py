"""The --claims input of `certify dra-driver`, checked against the API server before anything starts.

A claim that was replaced since (same name, other UID) or is not allocated to this driver and node cannot be
prepared by any driver: upstream's kubeletplugin helper refuses it (k8s.io/dynamic-resource-allocation
kubeletplugin/draplugin.go, nodePluginImplementation.getResourceClaims: "claim %s/%s not allocated",
"claim %s/%s got replaced"). Judging that as the driver's FAIL would be wrong: it is the user's input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from device_conformance.errors import BadInput
from device_conformance.fakes.dra_driver.kubelet_client import Claim

ReadClaim = Callable[[str, str], dict[str, Any] | None]  # (namespace, name) -> ResourceClaim or None (404)

FIX = (
    "list the claims allocated to this driver and node with their current UIDs "
    "(kubectl get resourceclaims -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name,"
    "UID:.metadata.uid,ALLOCATED:.status.allocation.devices.results[*].device) and write those into --claims"
)


def _allocated_nodes(allocation: dict[str, Any]) -> list[str] | None:
    """The node names the allocation's nodeSelector pins it to (matchFields metadata.name, as the scheduler
    writes it for node-local devices), or None when it names no node (network-attached devices)."""
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []
    names = [
        value
        for term in terms
        for field in term.get("matchFields") or []
        if field.get("key") == "metadata.name" and field.get("operator") == "In"
        for value in field.get("values") or []
    ]
    return names or None


def claim_problems(
    claim: Claim, obj: dict[str, Any] | None, driver: str, node: str | None, devices: list[str] | None = None
) -> list[str]:
    """What is wrong with one --claims entry given the ResourceClaim the API server holds (None: not found)."""
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
    results = [r for r in (allocation.get("devices") or {}).get("results") or [] if r.get("driver") == driver]
    if not results:
        return [f"{where} has no devices allocated from driver {driver}"]
    problems = []
    nodes = _allocated_nodes(allocation)
    if node and nodes is not None and node not in nodes:
        problems.append(f"{where} is allocated for node(s) {nodes}, not {node}")
    got = sorted(str(r.get("device")) for r in results)
    if devices is not None and sorted(devices) != got:
        problems.append(f"{where}: --claims lists devices {sorted(devices)}, the allocation has {got}")
    return problems


def check_claims(
    claims: list[Claim], allocated: dict[str, list[str]], driver: str, node: str | None, read: ReadClaim
) -> None:
    """BadInput naming every bad --claims entry, or nothing when all can be prepared by this driver here."""
    problems = [p for c in claims for p in claim_problems(c, read(c[0], c[2]), driver, node, allocated.get(c[1]))]
    if problems:
        raise BadInput("--claims: " + "; ".join(problems), FIX)


def api_reader(kubeconfig: str) -> ReadClaim:
    """Reads ResourceClaims through resource.k8s.io/v1 with CustomObjectsApi (which works for resource.k8s.io
    objects with the kubernetes client 37, whose typed API is a rewrite)."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    api = client.CustomObjectsApi(config.new_client_from_config(config_file=kubeconfig))

    def read(namespace: str, name: str) -> dict[str, Any] | None:
        try:
            return dict(api.get_namespaced_custom_object("resource.k8s.io", "v1", namespace, "resourceclaims", name))
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise BadInput(f"--claims: reading ResourceClaim {namespace}/{name}: HTTP {exc.status}", FIX) from exc

    return read
