"""podresources v1 with DRA: List and Get report each container's claims (`dynamic_resources`: driver, pool,
device and CDI IDs, exactly what NodePrepareResources answered), before and after a kubelet restart (then from
dra_manager_state); DRA devices are not device-plugin devices (neither in `devices` nor in
GetAllocatableResources)."""

import pytest
from device_conformance.fixtures.dra_pods import device_key, in_device_order

from device_conformance.framework import (
    PODRESOURCES_REPEATS_EARLIER_CDI_IDS,
    SINCE_DRA,
    SINCE_PODRESOURCES_GET,
    ClaimResource,
    DynamicResource,
    Pending,
    claim_record,
    podresources,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


def podresources_probe(socket, pod, driver_name, expected):
    """A probe: None when List, Get and GetAllocatableResources all say what they must, else what they said."""

    def probe():
        listed = podresources.find_pod(podresources.list_pod_resources(socket), pod.name, pod.namespace)
        if listed is None:
            return Pending(f"{pod} not listed")
        seen = {
            "List": in_device_order(listed.container("main").dynamic_resources),
            "Get": in_device_order(
                podresources.get_pod_resources(socket, pod.name, pod.namespace).container("main").dynamic_resources
            ),
            "List devices": listed.container("main").devices,
            "allocatable": [r for r in podresources.allocatable_resources(socket).device_ids if driver_name in r],
        }
        want = {"List": expected, "Get": expected, "List devices": (), "allocatable": []}
        return True if seen == want else Pending(f"seen {seen}, expected {want}")

    return probe


def expected_claim(driver, pod):
    """What podresources must report for the pod's claim: each device NodePrepareResources answered, with its
    own CDI IDs."""
    claim = pod.claim()
    name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    answered = driver.prepared()[uid]["devices"]
    resources = sorted(
        (
            ClaimResource(driver.config.driver_name, d["pool_name"], d["device_name"], tuple(d["cdi_device_ids"]))
            for d in answered
        ),
        key=device_key,
    )
    assert [r.device_name for r in resources] == pod.allocated_devices(), f"prepared: {answered}"
    return uid, (DynamicResource(name, pod.namespace, tuple(resources)),)


@pytest.mark.disruptive
@SINCE_PODRESOURCES_GET
def test_list_and_get_report_the_claims_device_before_and_after_a_kubelet_restart(
    node, dra_driver, dra_objects, kubelet_restored
):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("podres", driver)
    pod.wait_running()
    uid, expected = expected_claim(driver, pod)
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))

    probe = podresources_probe(socket, pod, driver.config.driver_name, expected)
    until(probe, what=f"podresources to report the claim of {pod}", timeout=timeouts.PODRESOURCES_LISTED)
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    until(
        probe,
        what=f"podresources to report the claim of {pod} after the kubelet restart",
        timeout=timeouts.PODRESOURCES_LISTED,
    )
    assert claim_record(driver.calls("NodePrepareResources")) == [([uid], "ok")], "not prepared again"


@pytest.mark.known_bug(PODRESOURCES_REPEATS_EARLIER_CDI_IDS)
@SINCE_PODRESOURCES_GET
def test_each_device_of_a_claim_is_listed_with_only_its_own_cdi_ids(node, dra_driver, dra_objects, shows_known_bug):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    pod = dra_objects.claim_pod("podres-two", driver, request={"count": 2})
    pod.wait_running()
    _, expected = expected_claim(driver, pod)
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    probe = podresources_probe(socket, pod, driver.config.driver_name, expected)
    with shows_known_bug(PODRESOURCES_REPEATS_EARLIER_CDI_IDS):
        until(probe, what=f"podresources to report both devices of {pod}", timeout=timeouts.PODRESOURCES_LISTED)
