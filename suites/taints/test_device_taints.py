"""Device taints against the real scheduler and device-taint-eviction controller, devices from the fake driver.

Evicted pods are held by a finalizer (keep=True) so their DisruptionTarget condition stays readable.
"""

from datetime import datetime

import pytest

from device_conformance import timeouts
from device_conformance.expectations.dra import (
    FIRST_DEVICE_TAINTS_MINOR,
    FIRST_NONE_TAINT_EFFECT_MINOR,
    NOEXECUTE_TOLERATION_IGNORED,
)
from device_conformance.fakes.dra_driver import DeviceSpec
from device_conformance.kube import dra, pods
from device_conformance.wait import dra as wait_dra

pytestmark = [
    pytest.mark.taints,
    pytest.mark.since(f"1.{FIRST_DEVICE_TAINTS_MINOR}", "device taints, DRADeviceTaints (kubernetes#130447)"),
]

KEY = "example.com/broken"
EVICTION_REASON = "DeletionByDeviceTaintManager"
EVICTION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"
TOLERATION_SECONDS = 8
SINCE_RULE_STATUS = pytest.mark.since(
    f"1.{FIRST_NONE_TAINT_EFFECT_MINOR}", "effect None and DeviceTaintRule status (kubernetes#134152)"
)


def running_pod(dra_objects, driver, **request):
    """A kept pod with a claim from a template, Running -> (its handle, the allocated device name)."""
    pod = dra_objects.claim_pod("taint", driver, request=request, keep=True)
    pod.wait_running()
    devices = pod.allocated_devices()
    assert len(devices) == 1, f"{pod} runs with allocated devices {devices}, expected one"
    return pod, devices[0]


def assert_evicted(pod, timeout=timeouts.TAINT_EVICTION):
    cond = pod.wait_condition("DisruptionTarget", timeout=timeout)
    assert (cond.reason, cond.message) == (EVICTION_REASON, EVICTION_MESSAGE)
    assert pod.read().metadata.deletion_timestamp is not None
    assert "Marking for deletion" in pod.wait_event("DeviceTaintManagerEviction")
    return cond


def evicted(current):
    """A stays() probe on the pod: None while it is not being deleted, else its state."""
    if current.metadata.deletion_timestamp is not None:
        conditions = [(c.type, c.reason) for c in current.status.conditions or []]
        return f"pod deleted: {pods.summary(current)} conditions={conditions}"
    return None


def toleration(effect, seconds=None):
    entry = {"key": KEY, "operator": "Exists", "effect": effect}
    if seconds is not None:
        entry["tolerationSeconds"] = seconds
    return entry


def eviction_in_progress(rule):
    """The EvictionInProgress condition of a DeviceTaintRule ({} while it has none)."""
    conds = {c["type"]: c for c in (rule.get("status") or {}).get("conditions") or []}
    return conds.get("EvictionInProgress", {})


@pytest.mark.scenario("DRA-E19", "DRA-E20", "DT-U1")
def test_noschedule_taint_keeps_new_pods_unschedulable_until_tolerated(dra_driver, dra_objects):
    driver = dra_driver(devices=(DeviceSpec("dev-0", taints=[dra.device_taint(KEY, "NoSchedule")]),))
    blocked = dra_objects.claim_pod("plain", driver)
    blocked.wait_unschedulable()

    tolerating = dra_objects.claim_pod("tolerates", driver, request={"tolerations": [toleration("NoSchedule")]})
    tolerating.wait_running()
    assert blocked.read().spec.node_name is None


@pytest.mark.scenario("DT-U1")
def test_noschedule_taint_does_not_evict_a_running_pod(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_pod(dra_objects, driver)
    driver.set_taints(device, [dra.device_taint(KEY, "NoSchedule")])
    pod.stays(evicted, what="not to be evicted", duration=5)


@pytest.mark.scenario("DT-U1")
def test_noexecute_taint_in_resourceslice_evicts_the_pod(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    pod, device = running_pod(dra_objects, driver)
    driver.set_taints(device, [dra.device_taint(KEY, "NoExecute")])
    assert_evicted(pod)


def rule_evicts_one_of_two(dra_objects, driver):
    """Two running pods, a NoExecute DeviceTaintRule on the first one's device: it is evicted, the other
    not. Returns the rule's name."""
    pod, device = running_pod(dra_objects, driver)
    bystander, _ = running_pod(dra_objects, driver)
    rule = dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name, device=device)
    assert_evicted(pod)
    problem = evicted(bystander.read())
    assert problem is None, f"the other device is not tainted, but: {problem}"
    return rule


@pytest.mark.scenario("DRA-E21", "DT-U1")
def test_noexecute_device_taint_rule_evicts_the_pod(dra_driver, dra_objects):
    rule_evicts_one_of_two(dra_objects, dra_driver(devices=("dev-0", "dev-1")))


@SINCE_RULE_STATUS
@pytest.mark.scenario("DT-U5")
def test_device_taint_rule_status_completes_after_the_eviction(dra_driver, dra_objects):
    rule = rule_evicts_one_of_two(dra_objects, dra_driver(devices=("dev-0", "dev-1")))
    wait_dra.for_rule(
        dra_objects.kube,
        dra_objects,
        rule,
        lambda obj: eviction_in_progress(obj).get("reason") == "Completed",
        "to report EvictionInProgress reason Completed",
        timeout=timeouts.TAINT_RULE_STATUS,
    )


@pytest.mark.known_bug(NOEXECUTE_TOLERATION_IGNORED)
@pytest.mark.scenario("DT-U3")
def test_toleration_seconds_delay_the_eviction(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_pod(dra_objects, driver, tolerations=[toleration("NoExecute", TOLERATION_SECONDS)])
    name = dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name, device=device)
    rule = dra_objects.get_rule(name)
    time_added = _parse(rule["spec"]["taint"]["timeAdded"])
    pod.stays(evicted, what="to stay while the toleration lasts", duration=TOLERATION_SECONDS - 3)
    cond = assert_evicted(pod, timeout=TOLERATION_SECONDS + timeouts.TAINT_EVICTION)
    delay = (cond.last_transition_time - time_added).total_seconds()
    # Both timestamps have one-second resolution.
    assert delay >= TOLERATION_SECONDS - 1, f"evicted {delay:.0f}s after the taint, toleration is {TOLERATION_SECONDS}s"


@pytest.mark.scenario("DT-U4")
def test_removing_the_taint_first_cancels_the_eviction(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_pod(dra_objects, driver, tolerations=[toleration("NoExecute", TOLERATION_SECONDS)])
    driver.set_taints(device, [dra.device_taint(KEY, "NoExecute")])
    driver.set_taints(device, [])
    event = pod.wait_event("Cancelling deletion", timeout=timeouts.TAINT_EVICTION)
    assert "DeviceTaintManagerEviction" in event
    pod.stays(evicted, what="to stay after the taint is gone", duration=TOLERATION_SECONDS + 3)


@SINCE_RULE_STATUS
@pytest.mark.scenario("DT-U1")
def test_effect_none_only_reports_in_the_rule_status(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    pod, _ = running_pod(dra_objects, driver)
    rule = dra_objects.taint_rule(dra.device_taint(KEY, "None"), driver=driver.config.driver_name)

    obj = wait_dra.for_rule(
        dra_objects.kube,
        dra_objects,
        rule,
        lambda obj: eviction_in_progress(obj).get("reason") == "NoEffect",
        "to report NoEffect",
        timeout=timeouts.TAINT_RULE_STATUS,
    )
    cond = eviction_in_progress(obj)
    assert cond["status"] == "False"
    assert cond["message"].startswith(
        "2 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace "
    ), cond["message"]
    pod.stays(evicted, what="not to be evicted for effect None", duration=3)


def _parse(timestamp):
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
