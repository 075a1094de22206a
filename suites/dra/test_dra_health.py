"""Device health from the driver's DRAResourceHealth stream (KEP-4680, gate ResourceHealthStatus, beta and on
by default from 1.36) in the pod's containerStatuses[].allocatedResourcesStatus."""

import pytest

from device_conformance.expectations.dra import CLAIM_POD_START_TIMEOUT
from device_conformance.kube import pods
from device_conformance.wait import kube as wait
from device_conformance.wait.core import Pending, until

pytestmark = pytest.mark.dra

POD_TIMEOUT = CLAIM_POD_START_TIMEOUT
STREAM_TIMEOUT = 30  # the kubelet (re)opens the health stream every 5 s
HEALTH_TIMEOUT = 30


def device_health(kube, namespace, name):
    """{resourceID: health} of the pod's main container, as the kubelet reports it."""
    pod = pods.read(kube, namespace, name)
    found = {}
    for status in pod.status.container_statuses or []:
        for resource in status.allocated_resources_status or []:
            for entry in resource.resources or []:
                found[(resource.name, entry.resource_id)] = entry.health
    return found


def test_health_updates_reach_the_pod_status(kube, namespace, cluster, dra_driver, dra_objects):
    if not cluster.k8s_version.at_least(36):
        pytest.skip("ResourceHealthStatus is on by default from 1.36 (beta); the suite does not turn it on before")
    driver = dra_driver(devices=("dev-0",), health_service=True)
    pod = dra_objects.pod("health", template=dra_objects.template(driver.config.driver_name))
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    until(
        lambda: True if driver.status()["health"]["open_streams"] else Pending(str(driver.status()["health"])),
        what="the kubelet to open the driver's health stream",
        timeout=STREAM_TIMEOUT,
    )
    # The kubelet names the device by its first CDI device ID, else <driver>/<pool>/<device> (manager.go).
    (prepared,) = driver.prepared().values()
    (device,) = prepared["devices"]
    fallback = f"{driver.config.driver_name}/{device['pool_name']}/{device['device_name']}"
    key = ("claim:dev", (device["cdi_device_ids"] or [fallback])[0])

    for health in ("Unhealthy", "Healthy"):
        driver.push_health({"dev-0": health})

        def reported(health=health):
            seen = device_health(kube, namespace, name)
            return True if seen.get(key) == health else Pending(f"allocatedResourcesStatus: {seen}")

        until(reported, what=f"{key} to be reported {health} in the pod status", timeout=HEALTH_TIMEOUT)
