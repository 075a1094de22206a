"""Device health from the driver's DRAResourceHealth stream (KEP-4680, gate ResourceHealthStatus, beta and on
by default from 1.36) in the pod's containerStatuses[].allocatedResourcesStatus.

The stream is opened on the API version the kubelet prefers among those the driver advertised
(HEALTH_API_PREFERENCE: v1alpha1 alone before 1.37; v1, then v1alpha1, from 1.37.0-rc.0, kubernetes#139477). The
drivers real clusters run advertise one of three sets: both, as the kubeletplugin helper does by default from
k8s.io/dynamic-resource-allocation v0.37 (draplugin.go); v1alpha1 alone, a driver built before v1 existed; v1
alone, the helper with HealthV1alpha1(false).
"""

import pytest
from device_conformance.fixtures.dra_health import health_key, wait_health, wait_stream

from device_conformance.framework import (
    HEALTH_API_PREFERENCE,
    HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE,
    SINCE_DRA,
    SINCE_RESOURCE_HEALTH_STATUS,
    Pending,
    health_api_opened,
    outcome,
    stays,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


# The DRAResourceHealth versions a driver serves and advertises (fakes/dra_driver/config.py HEALTH_APIS).
HEALTH_API_SETS = {
    "v1-and-v1alpha1": ["v1", "v1alpha1"],  # the kubeletplugin helper's default from v0.37
    "v1alpha1-only": ["v1alpha1"],  # a driver built before v1 existed
    "v1-only": ["v1"],  # the helper with HealthV1alpha1(false)
}


@SINCE_RESOURCE_HEALTH_STATUS
@pytest.mark.scenario("DRA-H1")
@pytest.mark.parametrize("served", list(HEALTH_API_SETS))
def test_health_updates_reach_the_pod_status(dra_driver, dra_objects, kube_version, served):
    """The kubelet opens one stream, on the version it prefers among those the driver serves, and the driver's
    pushes on it reach the pod status."""
    opened = health_api_opened(kube_version, HEALTH_API_SETS[served])
    if opened is None:
        pytest.skip(
            f"a {kube_version} kubelet knows DRAResourceHealth {outcome(HEALTH_API_PREFERENCE, kube_version)}, none "
            f"of {HEALTH_API_SETS[served]}: such a driver reports no health to it (kubernetes#139477 brought v1 in "
            "1.37.0-rc.0)"
        )
    driver = dra_driver(devices=("dev-0",), health_service=True, health_apis=HEALTH_API_SETS[served])
    pod = dra_objects.claim_pod("health", driver)
    pod.wait_running()
    wait_stream(driver)
    assert [(c.service, c.outcome()) for c in driver.calls("NodeWatchResources")] == [
        (f"{opened}.DRAResourceHealth", "in flight")
    ], f"one open stream, on {opened}: the version a {kube_version} kubelet prefers among {HEALTH_API_SETS[served]}"
    key = health_key(driver, pod.claim_uid())
    for health in ("Unhealthy", "Healthy"):
        driver.push_health({"dev-0": health})
        wait_health([(pod, key)], health)


# An affected kubelet calls again every 5 s (wait.UntilWithContext in dra_plugin_manager.go, module source
# v1.36.4): the window sees two retries after the first call.
NO_HEALTH_CALL_WINDOW = 12


@SINCE_RESOURCE_HEALTH_STATUS
@pytest.mark.known_bug(HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE)
def test_no_health_stream_to_a_driver_without_the_health_service(dra_driver, shows_known_bug, kube_version):
    """kubernetes#141855: the kubelet opens the health stream of a driver that advertised DRAResourceHealth at
    registration, and never calls it on one that did not (the fake answers UNIMPLEMENTED and logs the call). A
    driver that advertises the service but declines it, as every kubeletplugin-helper driver without health does
    (pattern health-not-supported: UNIMPLEMENTED, kubeletplugin/health.go ErrHealthNotSupported), is called once:
    the fix stops watching on UNIMPLEMENTED (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go add(), v1.37.2)."""
    silent = dra_driver(devices=("dev-0",))
    assert not [v for v in silent.config.advertised_versions if v.endswith(".DRAResourceHealth")], "advertises none"
    advertised = dra_driver(devices=("dev-0",), health_service=True)
    declining = dra_driver(devices=("dev-0",), health_service=True, patterns=["health-not-supported"])
    # The control: this kubelet opens health streams at all (the gate is on), to the driver that offers one.
    until(
        lambda: True if advertised.status()["health"]["open_streams"] else Pending(str(advertised.status()["health"])),
        what="the kubelet to open the health stream of the driver that advertises it",
        timeout=timeouts.DRA_HEALTH_STREAM_OPEN,
    )
    opened = health_api_opened(kube_version, advertised.config.health_apis)
    assert [(c.service, c.outcome()) for c in advertised.calls("NodeWatchResources")] == [
        (f"{opened}.DRAResourceHealth", "in flight")
    ], f"one open stream, on {opened}: the version a {kube_version} kubelet prefers among those advertised"
    declined = until(
        lambda: [c for c in declining.calls("NodeWatchResources") if c.done] or Pending("no ended NodeWatchResources"),
        what="the kubelet to open the health stream of the driver that advertises it and declines",
        timeout=timeouts.DRA_HEALTH_STREAM_OPEN,
    )
    assert [(c.service, c.outcome()) for c in declined[:1]] == [(f"{opened}.DRAResourceHealth", "error UNIMPLEMENTED")]

    def calls_too_many() -> list[str] | None:
        extra = [c.summary() for c in silent.calls("NodeWatchResources")]
        extra += [c.summary() for c in declining.calls("NodeWatchResources")[1:]]
        return extra or None

    with shows_known_bug(HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE):
        stays(
            calls_too_many,
            what="no NodeWatchResources call to the driver without the health service, and no second one to the "
            "driver that declined it",
            duration=NO_HEALTH_CALL_WINDOW,
        )
