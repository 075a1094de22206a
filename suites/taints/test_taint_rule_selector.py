"""A DeviceTaintRule's deviceSelector: a rule without one matches no device (k8s.io/api resource/v1 types.go
DeviceTaintRuleSpec, "Without a selector, no devices are matched"), for the scheduler too (kubernetes#141620)."""

import pytest

from device_conformance.framework import (
    NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE,
    SINCE_DEVICE_TAINTS,
    DeviceSpec,
    dra,
    timeouts,
)

pytestmark = [pytest.mark.taints, SINCE_DEVICE_TAINTS]

KEY = "example.com/broken"


@pytest.mark.known_bug(NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE)
def test_rule_without_a_device_selector_taints_no_device(dra_driver, dra_objects, shows_known_bug):
    """A NoSchedule rule without deviceSelector exists before the driver publishes its one device; a pod asking
    for it, unschedulable until then, must be scheduled and run once the device is published. Before the fix the
    scheduler saw the rule's taint on every device and the pod stayed Pending. The pod is unschedulable first
    (no device at all), so the scheduler has had the rule for a whole scheduling attempt when the device comes."""
    driver = dra_driver(devices=())
    rule = dra_objects.taint_rule(dra.device_taint(KEY, "NoSchedule"), driver=None)
    assert "deviceSelector" not in dra_objects.get_rule(rule)["spec"], dra_objects.get_rule(rule)
    pod = dra_objects.claim_pod("unselected", driver)
    pod.wait_unschedulable()
    driver.set_devices([DeviceSpec("dev-0")])
    with shows_known_bug(NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE):  # before the fix: Pending, dev-0 "tainted"
        pod.wait_running(timeout=timeouts.CLAIM_POD_START)
        assert pod.allocated_devices() == ["dev-0"], f"{pod} runs on {pod.allocated_devices()}"
