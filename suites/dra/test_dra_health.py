"""Device health from the driver's DRAResourceHealth stream (KEP-4680, gate ResourceHealthStatus, beta and on
by default from 1.36) in the pod's containerStatuses[].allocatedResourcesStatus."""

import pytest

from device_conformance import timeouts
from device_conformance.expectations.dra import FIRST_DRA_MINOR, FIRST_RESOURCE_HEALTH_STATUS_MINOR
from device_conformance.wait.core import Pending, until

pytestmark = [
    pytest.mark.dra,
    pytest.mark.since(f"1.{FIRST_DRA_MINOR}", "resource.k8s.io/v1beta1, the oldest API the DRA objects fit"),
]


def device_health(pod):
    """{(resource name, resourceID): health} of the pod's containers, as the kubelet reports it."""
    found = {}
    for status in pod.status.container_statuses or []:
        for resource in status.allocated_resources_status or []:
            for entry in resource.resources or []:
                found[(resource.name, entry.resource_id)] = entry.health
    return found


@pytest.mark.since(
    f"1.{FIRST_RESOURCE_HEALTH_STATUS_MINOR}",
    "ResourceHealthStatus on by default (beta); the suite does not turn it on before",
)
@pytest.mark.scenario("DRA-H1")
def test_health_updates_reach_the_pod_status(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",), health_service=True)
    pod = dra_objects.claim_pod("health", driver)
    pod.wait_running()
    until(
        lambda: True if driver.status()["health"]["open_streams"] else Pending(str(driver.status()["health"])),
        what="the kubelet to open the driver's health stream",
        timeout=timeouts.DRA_HEALTH_STREAM_OPEN,
    )
    # The kubelet names the device by its first CDI device ID, else <driver>/<pool>/<device> (manager.go).
    (prepared,) = driver.prepared().values()
    (device,) = prepared["devices"]
    fallback = f"{driver.config.driver_name}/{device['pool_name']}/{device['device_name']}"
    key = ("claim:dev", (device["cdi_device_ids"] or [fallback])[0])

    for health in ("Unhealthy", "Healthy"):
        driver.push_health({"dev-0": health})

        def reported(health=health):
            seen = device_health(pod.read())
            return True if seen.get(key) == health else Pending(f"allocatedResourcesStatus: {seen}")

        until(reported, what=f"{key} to be reported {health} in the pod status", timeout=timeouts.DRA_HEALTH_REPORTED)
