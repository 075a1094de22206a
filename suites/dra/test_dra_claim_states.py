"""A pod's claim from allocation to release, as the kubelet and the driver see it: no pod start (and no
NodePrepareResources) without an allocation, a start once the driver's devices appear, a force-deleted pod's
claim unprepared, a completed pod's claim released and unprepared also when the first NodeUnprepareResources
failed."""

import pytest
from device_conformance.fixtures.dra_drivers import unique_driver

from device_conformance.framework import (
    PREPARE,
    SINCE_DRA,
    UNPREPARE,
    claim_record,
    dra,
    ensure_device_class,
    timeouts,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


def not_started(current):
    """A PodHandle.stays() probe: None while no container of the pod ran, else which did."""
    ran = [c.name for c in current.status.container_statuses or [] if c.state.running or c.state.terminated]
    return f"containers ran: {ran} (phase {current.status.phase})" if ran else None


@pytest.mark.scenario("DRA-E3")
def test_pod_whose_claim_cannot_be_allocated_does_not_run(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    pod = dra_objects.claim_pod("too-many", driver, request={"count": 3})
    message = pod.wait_unschedulable()
    assert "cannot allocate all claims" in message, f"the scheduler's message: {message}"
    assert pod.allocated_devices() == [], "a claim the node cannot satisfy got an allocation"
    pod.stays(not_started, what="to run no container without an allocated claim", duration=5)
    assert driver.calls(PREPARE) == [], "NodePrepareResources for a claim that was never allocated"


@pytest.mark.scenario("DRA-E14")
def test_pod_runs_once_its_driver_publishes_devices(cluster, kube, resource_api, dra_driver, dra_objects):
    name = unique_driver()
    ensure_device_class(name, kubeconfig=str(cluster.kubeconfig), api_version=resource_api)
    try:
        pod = dra_objects.claim_pod("no-driver-yet", name)
        pod.wait_unschedulable()
        driver = dra_driver(devices=("dev-0",), driver_name=name)
        pod.wait_running()
        assert pod.allocated_devices() == ["dev-0"]
        assert claim_record(driver.calls(PREPARE)) == [([pod.claim_uid()], "ok")], "prepared once"
    finally:
        dra.delete_device_class(kube, resource_api, name)


@pytest.mark.scenario("DRA-E4")
def test_force_deleted_pods_claim_is_unprepared(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("force", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    pod.force_delete()
    driver.wait_for_call(UNPREPARE, done=True, timeout=timeouts.UNPREPARE)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "unprepared exactly once"
    assert driver.prepared() == {}


@pytest.mark.scenario("DRA7", "DRA-E11")
def test_completed_pod_is_released_and_unprepared_after_a_failed_unprepare(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    claim = dra_objects.claim(driver.config.driver_name)  # a ResourceClaim of its own: it outlives the pod
    driver.fail_unprepare("injected unprepare failure", times=1)
    pod = dra_objects.claim_pod("done", claim=claim, command=["true"])
    pod.wait_phase("Succeeded")
    uid = pod.claim_uid()
    driver.wait_for_call(UNPREPARE, ok=True, timeout=timeouts.UNPREPARE_RETRY)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "error UNKNOWN"), ([uid], "ok")]
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared once, for the pod's only start"
    assert driver.prepared() == {}
    released = pod.wait_claim(lambda c: not wait_dra.reserved_uids(c), "to be reserved for no pod")
    assert pod.read().status.phase == "Succeeded", "the pod is no longer Succeeded"
    assert released["metadata"]["uid"] == uid
