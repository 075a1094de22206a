"""What the DRA scenarios make and name beside the claim pods of DraObjects: the kubelet's two claim calls to a
driver, a ResourceClaim of a chosen name, and a ResourceSlice published on a driver's behalf."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from device_conformance.core import timeouts
from device_conformance.fakes.dra_driver import DeviceSpec
from device_conformance.fakes.dra_driver.resourceslices import build_resource_slice
from device_conformance.framework.handles import ClaimPodHandle
from device_conformance.kube import dra
from device_conformance.kube.client import Kube

# The kubelet's calls of a claim to a driver's DRA service (fake drivers log them by these method names).
PREPARE, UNPREPARE = "NodePrepareResources", "NodeUnprepareResources"


def make_claim(objects: Any, driver: Any, name: str) -> str:
    """A ResourceClaim named `name` in the test's namespace (`objects`: its DraObjects) asking for one device of
    `driver` (a driver handle) -> its UID."""
    spec = dra.claim_spec([dra.device_request(driver.config.driver_name)])
    created = dra.create(objects.kube, objects.namespace, "resourceclaims", dra.claim_manifest(name, spec, objects.api))
    return created["metadata"]["uid"]


def slice_of_one_device(driver: str, node_name: str, api: str) -> dict[str, Any]:
    """The ResourceSlice a driver publishes for one device, dev-0, on `node_name` (pool named after the node)."""
    return build_resource_slice(
        driver=driver,
        node_name=node_name,
        pool=node_name,
        generation=1,
        devices=[DeviceSpec("dev-0")],
        api_version=api,
    )


def publish_slice(kube: Kube, api: str, node_name: str, driver: str) -> tuple[str, str]:
    """Publish, as driver `driver` would, a ResourceSlice of one device on `node_name` (no driver behind it)
    -> (its name, its UID)."""
    body = slice_of_one_device(driver, node_name, api)
    created = kube.custom.create_cluster_custom_object(dra.GROUP, api.split("/")[1], "resourceslices", body)
    return created["metadata"]["name"], created["metadata"]["uid"]


def prepare_held_across(driver: Any, pod: ClaimPodHandle, end_kubelet: Callable[[], object]) -> str:
    """The kubelet ends (`end_kubelet`: node.kubelet.restart or .crash) while `driver`, told to block_prepare()
    before `pod` was created, holds NodePrepareResources of the pod's claim: the driver registers with the next
    kubelet, which calls again and is held too; released, the pod runs. Returns the claim's UID."""
    # The first prepare of a new pod may be refused (node authorizer lag) and retried at the resync.
    driver.wait_for_blocked(PREPARE, timeout=timeouts.CLAIM_POD_START)
    end_kubelet()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    # The old kubelet's held call ends with its connection; the next kubelet asks again, and is held.
    driver.wait_for_call(PREPARE, count=2, timeout=timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART)
    driver.wait_for_blocked(PREPARE)
    driver.unblock()
    pod.wait_running(timeout=timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART)
    return pod.claim_uid()
