"""Device health from the driver's DRAResourceHealth stream (KEP-4680, gate ResourceHealthStatus, beta and on
by default from 1.36) in the pod's containerStatuses[].allocatedResourcesStatus."""

import pytest
from device_conformance.fixtures.dra_health import health_key, wait_health, wait_stream

from device_conformance.framework import (
    HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE,
    SINCE_DRA,
    SINCE_RESOURCE_HEALTH_STATUS,
    Pending,
    stays,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


@SINCE_RESOURCE_HEALTH_STATUS
@pytest.mark.scenario("DRA-H1")
def test_health_updates_reach_the_pod_status(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",), health_service=True)
    pod = dra_objects.claim_pod("health", driver)
    pod.wait_running()
    wait_stream(driver)
    key = health_key(driver, pod.claim_uid())
    for health in ("Unhealthy", "Healthy"):
        driver.push_health({"dev-0": health})
        wait_health([(pod, key)], health)


# An affected kubelet calls again every 5 s (wait.UntilWithContext in dra_plugin_manager.go, module source
# v1.36.4): the window sees two retries after the first call.
NO_HEALTH_CALL_WINDOW = 12


@SINCE_RESOURCE_HEALTH_STATUS
@pytest.mark.known_bug(HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE)
def test_no_health_stream_to_a_driver_without_the_health_service(dra_driver, shows_known_bug):
    """kubernetes#141855: the kubelet opens the health stream of a driver that advertised DRAResourceHealth at
    registration, and never calls it on one that did not (the fake answers UNIMPLEMENTED and logs the call)."""
    silent = dra_driver(devices=("dev-0",))
    assert "v1alpha1.DRAResourceHealth" not in silent.config.advertised_versions, "advertises no health service"
    advertised = dra_driver(devices=("dev-0",), health_service=True)
    # The control: this kubelet opens health streams at all (the gate is on), to the driver that offers one.
    until(
        lambda: True if advertised.status()["health"]["open_streams"] else Pending(str(advertised.status()["health"])),
        what="the kubelet to open the health stream of the driver that advertises it",
        timeout=timeouts.DRA_HEALTH_STREAM_OPEN,
    )
    assert [(c.service, c.outcome()) for c in advertised.calls("NodeWatchResources")] == [
        ("v1alpha1.DRAResourceHealth", "in flight")
    ], "one open stream, on the version the driver advertised"
    with shows_known_bug(HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE):
        stays(
            lambda: [c.summary() for c in silent.calls("NodeWatchResources")] or None,
            what="no NodeWatchResources call to the driver without the health service",
            duration=NO_HEALTH_CALL_WINDOW,
        )
