"""Device health pushed at once to every pod whose claims hold the device (KEP-4680, ResourceHealthStatus), in
the two ways several pods come to hold one device: one claim shared by two pods, and two claims on one device
(an admin-access claim, KEP-5018, gets the device another claim already holds).

The kubelet's push path (pkg/kubelet/cm/dra/manager.go HandleWatchResourcesStream, module source v1.37.1): for
each report that changes a device (healthInfoCache.updateHealthInfo), it snapshots which pods use which of the
driver's devices by walking every claim info entry (`for _, cInfo := range m.cache.claimInfo`) and appending each
entry's pods to the device's list (`podsByDevice[key] = append(podsByDevice[key],
cInfo.PodUIDs.UnsortedList()...)`), then sends the pods of the changed devices on the manager's update channel
(`m.update <- resourceupdates.Update{PodUIDs: podUIDs}`); the kubelet's sync loop syncs those pods at once
(pkg/kubelet/kubelet.go syncLoopIteration, `case update := <-kl.containerManager.Updates()`:
HandlePodSyncs), and the pod status carries the new health (Manager.UpdateAllocatedResourcesStatus). A pod
the push missed shows the change only at its next resync (timeouts.POD_RESYNC_PERIOD, 60-90 s).

test_dra_health_breadth.py (DRA-H4) has two pods on one claim and waits timeouts.DRA_HEALTH_REPORTED (30 s) for
the last of two updates, which a resync can meet. Here every pod must show each of three flips within
HEALTH_PUSHED (10 s), well under the resync: a resync comes at most once per pod in 60 s, so a pod left out of
the push cannot show all three flips in time (the flips take seconds each).

Proved against one-line breaks of a 1.37.1 tree (K8S_SOURCE; `pytest <this module> -n 1 -m ''
--k8s-source DIR --k8s-version 1.37.1`), each reverted afterwards (the same run passes):

- manager.go HandleWatchResourcesStream: `podsByDevice[key] = append(podsByDevice[key],
  cInfo.PodUIDs.UnsortedList()...)` -> `... cInfo.PodUIDs.UnsortedList()[:min(1, cInfo.PodUIDs.Len())]...)` (one
  pod of each claim is pushed: the shared claim's second pod waits for its resync):
  `WaitTimeout: timed out after 10s waiting for [('claim:dev', 'dc-c2458b48.example.com/device=56cff60b-…-dev-0'),
  (…), ('claim:dev', '…/device=7b6a3425-…-dev-0')] to be reported Unhealthy in the pod status of
  ['pod dc-df725f62/share0-82cb33', 'pod dc-df725f62/share1-9a5519', 'pod dc-df725f62/admin-2559ca']` /
  `last seen: allocatedResourcesStatus: {'pod …/share0-82cb33': {(…): 'Unhealthy'}, 'pod …/share1-9a5519':
  {(…): 'Unknown'}, 'pod …/admin-2559ca': {(…): 'Unhealthy'}}` (share0 and admin at 0.2 s, share1 still at 10 s)
- the same line -> `podsByDevice[key] = cInfo.PodUIDs.UnsortedList()` (the last claim walked on a device wins: the
  pods of the device's other claim wait for their resync): the first flip still reached all three pods (pods just
  started are synced for other reasons too), the second did not:
  `WaitTimeout: timed out after 10s waiting for [(…)] to be reported Healthy in the pod status of
  ['pod dc-6e992d9e/share0-abe282', 'pod dc-6e992d9e/share1-409afb', 'pod dc-6e992d9e/admin-42f1c4']` /
  `last seen: allocatedResourcesStatus: {'pod …/share0-abe282': {(…): 'Unhealthy'}, 'pod …/share1-409afb':
  {(…): 'Unhealthy'}, 'pod …/admin-42f1c4': {(…): 'Healthy'}}`
"""

from typing import Any

import pytest
from device_conformance.fixtures.dra_health import health_key, wait_health, wait_stream
from kubernetes import client

from device_conformance.framework import (
    SINCE_ADMIN_ACCESS,
    SINCE_DRA,
    SINCE_RESOURCE_HEALTH_STATUS,
    Pending,
    dra,
    pods,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra, SINCE_DRA, SINCE_RESOURCE_HEALTH_STATUS]

ADMIN_LABEL = "resource.kubernetes.io/admin-access"
# A pushed update shows in the pod status within this: the push and the pod sync it starts take well under a
# second here; a pod the push missed waits for its resync (timeouts.POD_RESYNC_PERIOD, 60-90 s).
HEALTH_PUSHED = 10
FLIPS = ("Unhealthy", "Healthy", "Unhealthy")


def admin_claim(kube: Any, namespace: str, api: str, device_class: str) -> str:
    """A ResourceClaim with one adminAccess request in `namespace`, labelled for admin access first -> its name.
    The API server's admission reads the label from its namespace informer: the create is retried until it
    sees it (the refusal names the label)."""
    kube.core.patch_namespace(namespace, {"metadata": {"labels": {ADMIN_LABEL: "true"}}})
    request = dra.device_request(device_class)
    request["exactly"]["adminAccess"] = True
    name = pods.unique_name("admin")
    body = dra.claim_manifest(name, dra.claim_spec([request]), api)

    def created() -> dict[str, Any] | Pending:
        try:
            return dra.create(kube, namespace, "resourceclaims", body)
        except client.ApiException as exc:
            return Pending(f"HTTP {exc.status}: {exc.body[:200]}")

    until(created, what=f"admin-access claim {namespace}/{name} to be accepted", timeout=timeouts.CLAIM)
    return name


def results(claim: dict[str, Any]) -> list[dict[str, Any]]:
    return claim["status"]["allocation"]["devices"]["results"]


@SINCE_ADMIN_ACCESS
@pytest.mark.scenario("DRA-X2", "DRA-H4")
def test_health_is_pushed_to_every_pod_of_a_shared_claim_and_of_an_admin_claim_on_the_device(
    kube, namespace, dra_driver, dra_objects
):
    """One device, dev-0. Pods `share0` and `share1` use one ResourceClaim (allocated dev-0); pod `admin` uses an
    admin-access ResourceClaim, allocated dev-0 too. The driver flips dev-0 Unhealthy, Healthy, Unhealthy: after
    each push, all three pods report it within HEALTH_PUSHED, each under its own claim's device ID."""
    driver = dra_driver(devices=("dev-0",), health_service=True)
    name = driver.config.driver_name
    shared = dra_objects.claim(name)
    admin = admin_claim(kube, namespace, dra_objects.api, name)
    sharing = [dra_objects.claim_pod(f"share{i}", claim=shared) for i in range(2)]
    monitor = dra_objects.claim_pod("admin", claim=admin)
    for pod in (*sharing, monitor):
        pod.wait_running()
    wait_stream(driver)

    shared_claim, admin_claim_object = sharing[0].claim(), monitor.claim()
    allocated = {
        c["metadata"]["name"]: [(r["device"], r.get("adminAccess")) for r in results(c)]
        for c in (shared_claim, admin_claim_object)
    }
    assert allocated == {shared: [("dev-0", None)], admin: [("dev-0", True)]}, f"allocations: {allocated}"
    shared_uid, admin_uid = shared_claim["metadata"]["uid"], admin_claim_object["metadata"]["uid"]
    assert sorted(driver.prepared()) == sorted([shared_uid, admin_uid]), "both claims prepared on the node"
    watched = [(pod, health_key(driver, shared_uid)) for pod in sharing] + [(monitor, health_key(driver, admin_uid))]
    assert watched[0][1] != watched[2][1], f"each claim names dev-0 by its own CDI device: {watched[0][1]}"

    for health in FLIPS:
        assert driver.push_health({"dev-0": health}) == 1, "the kubelet's one health stream got the update"
        wait_health(watched, health, timeout=HEALTH_PUSHED)
