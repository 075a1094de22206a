"""An API server for `certify dra-test-driver`: upstream's DRA test driver reads every claim it prepares from
there. Its kubelet plugin is built on k8s.io/dynamic-resource-allocation/kubeletplugin, whose
NodePrepareResources (draplugin.go, nodePluginImplementation.getResourceClaims) gets each claim of the call
from the API server, fails the whole call when one is missing, has no status.allocation or another UID, and
only then hands the claims to the driver. So its claim clauses need allocated ResourceClaims, which this
module creates on a local cluster brought up as `device-conformance cluster up` does (providers/local), and
tears down afterwards, also on Ctrl-C or SIGTERM.

The allocation is written into each claim's status the way the scheduler's allocator would
(dynamic-resource-allocation structured/internal/stable/allocator_stable.go: one result per request, and a
nodeSelector matching metadata.name for devices of a node-local slice). No status.reservedFor: the helper
does not read it, and the resource claim controller deallocates only on a reservedFor going to empty
(pkg/controller/resourceclaim/controller.go syncClaim), never a claim that had none.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from device_conformance.certify.upstream import DRA_TEST_DRIVER_NAME, NO_CLUSTER_NODE
from device_conformance.expectations.versions import KubeVersion
from device_conformance.fakes.dra_driver.kubelet_client import Claim
from device_conformance.kube import dra
from device_conformance.kube.client import Kube

API_VERSION = "resource.k8s.io/v1"
NAMESPACE = "dc-certify-upstream"
REQUEST = "dev"
# test/e2e/dra/test-driver/app/server.go (kubelet-plugin RunE): it publishes one pool named after --node-name
# with --num-devices (default 4) devices "device-%02d"; its prepare (kubeletplugin.go nodePrepareResource)
# answers the pool and device of each allocation result for its driver. One device per claim, none shared.
DEVICES = ("device-00", "device-01")


@dataclass
class AllocatedClaims:
    """What the test driver and DraDriverTarget need: the API server (None: no cluster, one that leads
    nowhere), the node the driver runs for, claims allocated there."""

    kubeconfig: Path | None
    node_name: str
    claims: list[Claim] = field(default_factory=list)
    # Claim UID -> the device names of its allocation (DraDriverTarget.allocated).
    allocated: dict[str, list[str]] = field(default_factory=dict)


def device_class_manifest(driver: str = DRA_TEST_DRIVER_NAME) -> dict[str, Any]:
    """The DeviceClass the claims request from: all devices of the driver (as upstream's e2e creates one per
    driver, test/e2e/dra/utils/builder.go Builder.Class)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def claim_manifest(name: str, driver: str = DRA_TEST_DRIVER_NAME) -> dict[str, Any]:
    """A ResourceClaim asking for one device of the driver's class."""
    spec = dra.claim_spec([dra.device_request(driver, name=REQUEST)])
    return dra.claim_manifest(name, spec, API_VERSION)


def allocation(node_name: str, device: str, driver: str = DRA_TEST_DRIVER_NAME) -> dict[str, Any]:
    """status.allocation as the scheduler writes it for one device of the node's own pool (the test driver
    names its pool after the node)."""
    result = {"request": REQUEST, "driver": driver, "pool": node_name, "device": device}
    node_field = {"key": "metadata.name", "operator": "In", "values": [node_name]}
    return {
        "devices": {"results": [result]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [node_field]}]},
    }


def with_allocation(created: dict[str, Any], node_name: str, device: str) -> dict[str, Any]:
    """The created claim (its resourceVersion kept, so the status update is checked against it) with its
    status.allocation set."""
    body = dict(created)
    body["status"] = {**(created.get("status") or {}), "allocation": allocation(node_name, device)}
    return body


def allocate_claims(kube: Kube, node_name: str, devices: tuple[str, ...] = DEVICES) -> list[dict[str, Any]]:
    """A namespace, the DeviceClass and one claim per device, each allocated to `node_name`; returns the
    claims as the API server stored them."""
    kube.core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    dra.create_device_class(kube, device_class_manifest())
    version = API_VERSION.split("/", 1)[1]
    claims = []
    for n, device in enumerate(devices):
        created = dra.create(kube, NAMESPACE, "resourceclaims", claim_manifest(f"certify-claim-{n}"))
        name = created["metadata"]["name"]
        body = with_allocation(created, node_name, device)
        claims.append(
            kube.custom.replace_namespaced_custom_object_status(
                dra.GROUP, version, NAMESPACE, "resourceclaims", name, body
            )
        )
    return claims


def target_claims(stored: list[dict[str, Any]]) -> tuple[list[Claim], dict[str, list[str]]]:
    """(claims, allocated) for DraDriverTarget from stored claims: (namespace, uid, name) and UID -> devices."""
    claims: list[Claim] = []
    allocated: dict[str, list[str]] = {}
    for claim in stored:
        meta = claim["metadata"]
        claims.append((meta["namespace"], meta["uid"], meta["name"]))
        results = claim["status"]["allocation"]["devices"]["results"]
        allocated[meta["uid"]] = [r["device"] for r in results if r["driver"] == DRA_TEST_DRIVER_NAME]
    return claims, allocated


def _sigterm_as_interrupt(_signum: int, _frame: FrameType | None) -> None:
    # CI stops runs with SIGTERM; as Ctrl-C it reaches the finally that tears the cluster down
    # (fixtures/cluster.py does the same for the suites' session cluster).
    raise KeyboardInterrupt


@contextmanager
def allocated_claims(version: KubeVersion, log: Callable[[str], None] = print) -> Iterator[AllocatedClaims]:
    """A local cluster of `version` (the settings of `cluster up`: K8S_BIN_DIR, K8S_SOURCE, ... from the
    environment) with claims allocated to its node; torn down on leaving, also on Ctrl-C or SIGTERM (the
    teardown itself defers both, providers/local/teardown.py)."""
    from device_conformance.providers import make_provider
    from device_conformance.settings import resolve

    provider = make_provider(resolve({"k8s_version": str(version), "provider": "local"}), log=log)
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        handle = provider.up()
        node_name = handle.nodes[0].name
        kube = Kube.from_kubeconfig(handle.kubeconfig)
        try:
            stored = allocate_claims(kube, node_name)
        finally:
            kube.close()
        claims, allocated = target_claims(stored)
        log(f"claims {[c[2] for c in claims]} in {NAMESPACE} allocated to node {node_name}: {allocated}")
        yield AllocatedClaims(handle.kubeconfig, node_name, claims, allocated)
    finally:
        try:
            provider.down()
        finally:
            signal.signal(signal.SIGTERM, previous)


@contextmanager
def api_server(version: KubeVersion, *, cluster: bool, log: Callable[[str], None] = print) -> Iterator[AllocatedClaims]:
    """allocated_claims(), or with cluster=False (`--no-cluster`) no API server and no claims: the claim
    clauses and DRA-SLICES are then NOT APPLICABLE."""
    if not cluster:
        yield AllocatedClaims(None, NO_CLUSTER_NODE)
        return
    with allocated_claims(version, log) as api:
        yield api
