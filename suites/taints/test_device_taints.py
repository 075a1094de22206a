"""Device taints against the real scheduler and device-taint-eviction controller, devices from the fake driver.

Evicted pods are held by a finalizer (keep=True) so their DisruptionTarget condition stays readable.

The "not evicted" verdicts hold for timeouts.TAINT_NO_EVICTION_WINDOW. Each of their scenarios is a module
fixture of its own; the `overlapping` marker starts them together before the module's first test, so those
windows run while the other tests of the module go on, and the tests at the end of the module collect their
verdicts.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from device_conformance.fixtures.dra_drivers import DraObjects

from device_conformance.framework import (
    EVICTION_EVENT_FOR_FIRST_POD_ONLY,
    NOEXECUTE_TOLERATION_IGNORED,
    SINCE_DEVICE_TAINTS,
    SINCE_RULE_STATUS,
    ClaimPodHandle,
    DeviceSpec,
    Watch,
    assert_evicted,
    assert_eviction_event,
    dra,
    evicted,
    eviction_in_progress,
    has_device_taints,
    has_none_taint_effect,
    not_evicted,
    parse_time,
    running_claim_pod,
    timeouts,
    toleration,
    wait_dra,
)

pytestmark = [
    pytest.mark.taints,
    SINCE_DEVICE_TAINTS,
    pytest.mark.overlapping(
        "noschedule_taint_on_a_running_pod", "noexecute_rule_on_one_of_two_pods", "effect_none_rule"
    ),
]

KEY = "example.com/broken"
TOLERATION_SECONDS = 8


@pytest.fixture
def event_per_eviction(cluster_versions):
    """Whether every evicted pod gets the controller's eviction event. Where kubernetes#134152's bug is (1.33-1.34
    control planes) only the first pod the controller evicts in its lifetime does: which pod that is depends on
    what the cluster evicted before, so there test_noexecute_taint_in_resourceslice_evicts_the_pod checks it
    (of its two evictions exactly one event at most) and the other tests leave the event out."""
    return not EVICTION_EVENT_FOR_FIRST_POD_ONLY.affects(EVICTION_EVENT_FOR_FIRST_POD_ONLY.judged_on(cluster_versions))


@pytest.mark.scenario("DRA-E19", "DRA-E20", "DT-U1")
def test_noschedule_taint_keeps_new_pods_unschedulable_until_tolerated(dra_driver, dra_objects):
    driver = dra_driver(devices=(DeviceSpec("dev-0", taints=[dra.device_taint(KEY, "NoSchedule")]),))
    blocked = dra_objects.claim_pod("plain", driver)
    blocked.wait_unschedulable()

    tolerating = dra_objects.claim_pod("tolerates", driver, request={"tolerations": [toleration(KEY, "NoSchedule")]})
    tolerating.wait_running()
    assert blocked.read().spec.node_name is None


@pytest.mark.known_bug(EVICTION_EVENT_FOR_FIRST_POD_ONLY)
@pytest.mark.scenario("DT-U1")
def test_noexecute_taint_in_resourceslice_evicts_the_pod(dra_driver, dra_objects, shows_known_bug):
    """Two pods on two devices, their devices tainted one after the other: each pod is evicted and gets its own
    event. A 1.33-1.34 controller records the event of the first pod it evicts only: of two, one at most."""
    driver = dra_driver(devices=("dev-0", "dev-1"))
    first, first_device = running_claim_pod(dra_objects, "taint", driver)
    second, second_device = running_claim_pod(dra_objects, "taint", driver)
    driver.set_taints(first_device, [dra.device_taint(KEY, "NoExecute")])
    assert_evicted(first, event=False)
    assert second.read().metadata.deletion_timestamp is None, f"{second} is deleted for the taint on {first_device}"
    driver.set_taints(second_device, [dra.device_taint(KEY, "NoExecute")])
    assert_evicted(second, event=False)
    with shows_known_bug(EVICTION_EVENT_FOR_FIRST_POD_ONLY):  # before the fix: no event for the second
        assert_eviction_event(second)
        assert_eviction_event(first)


@pytest.mark.known_bug(NOEXECUTE_TOLERATION_IGNORED)
@pytest.mark.scenario("DT-U3")
def test_toleration_seconds_delay_the_eviction(dra_driver, dra_objects, shows_known_bug, event_per_eviction):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(
        dra_objects, "taint", driver, tolerations=[toleration(KEY, "NoExecute", TOLERATION_SECONDS)]
    )
    name = dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name, device=device)
    rule = dra_objects.get_rule(name)
    time_added = parse_time(rule["spec"]["taint"]["timeAdded"])
    with shows_known_bug(NOEXECUTE_TOLERATION_IGNORED):  # before the fix: evicted at once
        pod.stays(evicted, what="to stay while the toleration lasts", duration=TOLERATION_SECONDS - 3)
    if evicted(pod.read()):  # only where the block above recorded the bug: the rest needs the pod it evicted
        return
    cond = assert_evicted(pod, timeout=TOLERATION_SECONDS + timeouts.TAINT_EVICTION, event=event_per_eviction)
    delay = (cond.last_transition_time - time_added).total_seconds()
    # Both timestamps have one-second resolution.
    assert delay >= TOLERATION_SECONDS - 1, f"evicted {delay:.0f}s after the taint, toleration is {TOLERATION_SECONDS}s"


@pytest.mark.known_bug(NOEXECUTE_TOLERATION_IGNORED)
@pytest.mark.scenario("DT-U4")
def test_removing_the_taint_first_cancels_the_eviction(dra_driver, dra_objects, shows_known_bug):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(
        dra_objects, "taint", driver, tolerations=[toleration(KEY, "NoExecute", TOLERATION_SECONDS)]
    )
    driver.set_taints(device, [dra.device_taint(KEY, "NoExecute")])
    with shows_known_bug(NOEXECUTE_TOLERATION_IGNORED):  # before the fix: evicted at once, nothing to cancel
        pod.stays(evicted, what="to stay while the toleration lasts", duration=2)
    if evicted(pod.read()):  # only where the block above recorded the bug: the rest needs the pod it evicted
        return
    driver.set_taints(device, [])
    event = pod.wait_event("Cancelling deletion", timeout=timeouts.TAINT_EVICTION)
    assert "DeviceTaintManagerEviction" in event
    pod.stays(evicted, what="to stay after the taint is gone", duration=TOLERATION_SECONDS + 3)


@dataclass
class RuleEviction:
    """A NoExecute DeviceTaintRule on the device of one of two running pods, the other pod's window running."""

    tainted: ClaimPodHandle  # evicted by the rule...
    bystander: Watch  # ...while the pod on the other device stays
    rule: str
    objects: DraObjects


@dataclass
class EffectNoneRule:
    """An effect-None DeviceTaintRule selecting a running pod's device, the pod's window running."""

    untouched: Watch
    rule: str
    objects: DraObjects


# A test's module fixtures set up before its `since` marker skips it: below the release they start nothing.


@pytest.fixture(scope="module")
def noschedule_taint_on_a_running_pod(request, cluster) -> Iterator[Watch | None]:
    """A NoSchedule taint put on the running pod's device; the window in which the pod must stay."""
    if not has_device_taints(cluster.k8s_version):
        yield None  # the module's since marker skips every test
        return
    shared = request.getfixturevalue("shared_dra")
    driver = shared.driver(devices=("dev-0",))
    pod, device = running_claim_pod(shared.objects, "taint", driver)
    driver.set_taints(device, [dra.device_taint(KEY, "NoSchedule")])
    window = not_evicted(pod, "not to be evicted for a NoSchedule taint on its device")
    yield window
    window.cancel()


@pytest.fixture(scope="module")
def noexecute_rule_on_one_of_two_pods(request, cluster) -> Iterator[RuleEviction | None]:
    """Two running pods, a NoExecute DeviceTaintRule on the first one's device; the other one's window."""
    if not has_device_taints(cluster.k8s_version):
        yield None  # the module's since marker skips every test
        return
    shared = request.getfixturevalue("shared_dra")
    objects = shared.objects
    driver = shared.driver(devices=("dev-0", "dev-1"))
    tainted, device = running_claim_pod(objects, "taint", driver)
    bystander, _ = running_claim_pod(objects, "taint", driver)
    rule = objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name, device=device)
    window = not_evicted(bystander, "not to be evicted by a rule that selects another device")
    yield RuleEviction(tainted, window, rule, objects)
    window.cancel()


@pytest.fixture(scope="module")
def effect_none_rule(request, cluster) -> Iterator[EffectNoneRule | None]:
    """A running pod, an effect-None DeviceTaintRule on its driver's devices; the pod's window (from 1.35)."""
    if not has_none_taint_effect(cluster.k8s_version):
        yield None  # SINCE_RULE_STATUS skips its test
        return
    shared = request.getfixturevalue("shared_dra")
    objects = shared.objects
    driver = shared.driver(devices=("dev-0", "dev-1"))
    pod, _ = running_claim_pod(objects, "taint", driver)
    rule = objects.taint_rule(dra.device_taint(KEY, "None"), driver=driver.config.driver_name)
    window = not_evicted(pod, "not to be evicted for effect None")
    yield EffectNoneRule(window, rule, objects)
    window.cancel()


# The tests below collect the verdicts of the scenario fixtures' windows. The `overlapping` marker starts the
# windows before the module's first test; these tests stay after the module's other tests so that the windows
# run while those go on (a collecting test blocks for what is left of its window).


@pytest.mark.scenario("DT-U1")
def test_noschedule_taint_does_not_evict_a_running_pod(noschedule_taint_on_a_running_pod):
    noschedule_taint_on_a_running_pod.holds()


@pytest.mark.scenario("DRA-E21", "DT-U1")
def test_noexecute_device_taint_rule_evicts_the_pod(noexecute_rule_on_one_of_two_pods, event_per_eviction):
    """Two running pods, a NoExecute DeviceTaintRule on the first one's device: it is evicted, the other
    not, over the whole window."""
    assert_evicted(noexecute_rule_on_one_of_two_pods.tainted, event=event_per_eviction)
    noexecute_rule_on_one_of_two_pods.bystander.holds()


@SINCE_RULE_STATUS
@pytest.mark.scenario("DT-U5")
def test_device_taint_rule_status_completes_after_the_eviction(noexecute_rule_on_one_of_two_pods):
    scenario = noexecute_rule_on_one_of_two_pods
    assert_evicted(scenario.tainted, event=True)
    wait_dra.for_rule(
        scenario.objects.kube,
        scenario.objects,
        scenario.rule,
        lambda obj: eviction_in_progress(obj).get("reason") == "Completed",
        "to report EvictionInProgress reason Completed",
        timeout=timeouts.TAINT_RULE_STATUS,
    )


@SINCE_RULE_STATUS
@pytest.mark.scenario("DT-U1")
def test_effect_none_only_reports_in_the_rule_status(effect_none_rule):
    obj = wait_dra.for_rule(
        effect_none_rule.objects.kube,
        effect_none_rule.objects,
        effect_none_rule.rule,
        lambda obj: eviction_in_progress(obj).get("reason") == "NoEffect",
        "to report NoEffect",
        timeout=timeouts.TAINT_RULE_STATUS,
    )
    cond = eviction_in_progress(obj)
    assert cond["status"] == "False", f"EvictionInProgress of an effect-None rule: {cond}"
    assert cond["message"].startswith(
        "2 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace "
    ), cond["message"]
    effect_none_rule.untouched.holds()
