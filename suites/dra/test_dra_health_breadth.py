"""Device health (KEP-4680, ResourceHealthStatus) beyond one pod and one update: a stopped driver's devices turn
Unknown, updates flow again once it is back (also for a pod started after the reconnect), and one device's
health reaches every pod that shares it while another pod's device keeps its own."""

import pytest
from device_conformance.fixtures.dra_health import health_key, wait_health, wait_stream

from device_conformance.framework import SINCE_DRA, SINCE_RESOURCE_HEALTH_STATUS, timeouts

pytestmark = [pytest.mark.dra, SINCE_DRA, SINCE_RESOURCE_HEALTH_STATUS]


@pytest.mark.slow  # the kubelet took 69 s to report the stopped driver's device Unknown (upstream allows 2 min)
@pytest.mark.scenario("DRA-H2", "DRA-H3")
def test_stopped_driver_devices_turn_unknown_and_updates_flow_after_it_returns(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0", "dev-1"), health_service=True)
    first = dra_objects.claim_pod("health-first", driver)
    first.wait_running()
    wait_stream(driver)
    first_key = health_key(driver, first.claim_uid())
    driver.push_health({"dev-0": "Healthy", "dev-1": "Healthy"})
    wait_health([(first, first_key)], "Healthy")

    driver.stop()
    wait_health([(first, first_key)], "Unknown", timeout=timeouts.DRA_HEALTH_UNKNOWN)

    driver.respawn()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    second = dra_objects.claim_pod("health-second", driver)
    second.wait_running()
    wait_stream(driver)
    second_key = health_key(driver, second.claim_uid())
    driver.push_health({first_key_device(driver, first): "Healthy", first_key_device(driver, second): "Unhealthy"})
    wait_health([(first, first_key), (second, second_key)], {str(first): "Healthy", str(second): "Unhealthy"})


def first_key_device(driver, pod):
    (device,) = driver.prepared()[pod.claim_uid()]["devices"]
    return device["device_name"]


@pytest.mark.scenario("DRA-H4")
def test_health_of_a_shared_device_reaches_every_pod_that_uses_it(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0", "dev-1"), health_service=True)
    shared = dra_objects.claim(driver.config.driver_name)
    sharing = [dra_objects.claim_pod(f"health-share{i}", claim=shared) for i in range(2)]
    own = dra_objects.claim_pod("health-own", driver)
    for pod in (*sharing, own):
        pod.wait_running()
    wait_stream(driver)
    shared_uid, own_uid = sharing[0].claim_uid(), own.claim_uid()
    shared_device, own_device = (driver.prepared()[u]["devices"][0]["device_name"] for u in (shared_uid, own_uid))
    watched = [(pod, health_key(driver, shared_uid)) for pod in sharing] + [(own, health_key(driver, own_uid))]

    # Two updates in a row: the kubelet must apply both, in order, to every pod of each device.
    driver.push_health({shared_device: "Unhealthy", own_device: "Unhealthy"})
    driver.push_health({shared_device: "Healthy"})
    want = {str(sharing[0]): "Healthy", str(sharing[1]): "Healthy", str(own): "Unhealthy"}
    wait_health(watched, want)
