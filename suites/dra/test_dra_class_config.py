"""DeviceClass configuration in a claim's allocation: the scheduler copies each class's config into
status.allocation.devices.config (source FromClass) for the driver to read, naming the requests it belongs to
(k8s.io/api resource/v1 types.go DeviceAllocationConfiguration: "Requests lists the names of requests where the
configuration applies. If empty, its applies to all requests"; allocator in k8s.io/dynamic-resource-allocation
v0.37.1 structured/internal/stable/allocator_stable.go)."""

import pytest
from device_conformance.fixtures.dra_pods import claim_with_requests

from device_conformance.framework import CLASS_CONFIG_NAMES_NO_REQUESTS, SINCE_DRA, build_device_class, dra

pytestmark = [pytest.mark.dra, SINCE_DRA]

PARAMETERS = {"mode": "from-class"}


@pytest.fixture
def configured_class(kube, dra_objects):
    """make(driver) -> the name of a DeviceClass of the driver's devices that carries an opaque config."""
    made = []

    def make(driver):
        name = f"{driver.config.driver_name}-configured"
        body = build_device_class(driver.config.driver_name, api_version=dra_objects.api, name=name)
        body["spec"]["config"] = [{"opaque": {"driver": driver.config.driver_name, "parameters": PARAMETERS}}]
        dra.create_device_class(kube, body)
        made.append(name)
        return name

    yield make
    for name in made:
        dra.delete_device_class(kube, dra_objects.api, name)


@pytest.mark.known_bug(CLASS_CONFIG_NAMES_NO_REQUESTS)
def test_class_config_names_only_the_requests_of_its_class(dra_driver, dra_objects, configured_class, shows_known_bug):
    """kubernetes#134789: a claim with a request of the driver's plain class and one of a class with a config;
    the config in the allocation must name the second request only, or the driver applies it to both."""
    driver = dra_driver(devices=("dev-0", "dev-1"))
    with_config = configured_class(driver)
    claim = claim_with_requests(dra_objects, {"plain": driver.config.driver_name, "configured": with_config})
    pod = dra_objects.claim_pod("class-config", claim=claim)
    pod.wait_running()
    devices = dra_objects.get_claim(claim)["status"]["allocation"]["devices"]
    assert sorted(r["request"] for r in devices["results"]) == ["configured", "plain"], devices["results"]
    expected = [
        {
            "source": "FromClass",
            "requests": ["configured"],
            "opaque": {"driver": driver.config.driver_name, "parameters": PARAMETERS},
        }
    ]
    with shows_known_bug(CLASS_CONFIG_NAMES_NO_REQUESTS):
        seen = devices.get("config")
        assert seen == expected, f"the class config, for the request of its class only: {seen}"
