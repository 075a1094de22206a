"""When the device-taint eviction controller evicts, measured against its own timestamps: a pod scheduled onto a
device already tainted NoExecute counts its tolerationSeconds from the taint's timeAdded; a rule changed from
NoExecute to None or NoSchedule cancels the pending eviction for good; a rule switched from None to NoExecute
counts tolerations from the switch; an evicted pod that takes long to terminate is not pending and the rule
reaches Completed (pkg/controller/devicetainteviction/device_taint_eviction.go, module source v1.37.1).

The eviction time is the DisruptionTarget condition's lastTransitionTime, which the controller sets when it
evicts (addConditionAndDeletePod, UpdatePodCondition); timeAdded and that time have one-second resolution and
come from the same machine's clock (local provider). The controller queues a pod for exactly taint timeAdded +
tolerationSeconds (claimEvictionTime, evictPod: workqueue.AddAfter(delay)), so EARLY_S/LATE_S allow the
rounding and a loaded machine's latency; every wrong origin the tests guard against is further off than that.

Each test, the break it fails on (one line of pkg/controller/devicetainteviction/device_taint_eviction.go in a
1.37.1 tree from `device-conformance k8s-source get 1.37.1`, run with `--k8s-source DIR --k8s-version 1.37.1`;
the unchanged tree passes all five) and the failing line:
- test_pod_scheduled_onto_a_tainted_device_counts_toleration_from_time_added
    claimEvictionTime `newEvictionTime := taint.deviceTaint().TimeAdded` -> `:= &claim.CreationTimestamp` (counted
    from the pod's claim): `evicted at 06:03:37, +13s from timeAdded + tolerationSeconds (06:03:24); allowed -1s..+4s`
- test_rule_changed_away_from_noexecute_cancels_the_eviction[None-NoEffect], [NoSchedule-OtherEffect]
    handleRuleChange `delete(tc.evictingRules, oldRule.Name)` (old effect NoExecute) commented out: `timed out after
    30s waiting for an event of pod ... containing 'Cancelling deletion'` (events: `Marking for deletion`), both;
    cancelEvict `delete(tc.deletePodAt, podRef)` commented out (the event comes, the queued eviction still fires):
    `expected pod ... not to be evicted after the rule's effect became None: watched past the cancelled deadline
    06:13:16 (timeAdded + 20s) by ruleStatusPeriod for 29s, but: pod deleted: ... DeletionByDeviceTaintManager`
- test_rule_switched_to_noexecute_counts_toleration_from_the_switch
    trackedTaint.deviceTaint `TimeAdded: tt.rule.Spec.Taint.TimeAdded` -> `&tt.rule.CreationTimestamp`: `expected
    pod ... to stay while the toleration counted from the switch lasts for 3s, but: pod deleted: ...
    DeletionByDeviceTaintManager` (the claim-creation break above fails it the same way)
- test_terminating_evicted_pod_is_not_pending_and_the_rule_completes
    countPendingPods `continue` for a pod with a deletionTimestamp commented out: `timed out after 24s waiting for
    DeviceTaintRule ... to report Completed while pod ... terminates`, seen `('PodsPendingEviction', 'True', '1 pod
    needs to be evicted in 1 namespace. 1 pod evicted since starting the controller.')`
"""

from datetime import UTC, datetime, timedelta

import pytest

from device_conformance.framework import (
    SINCE_DEVICE_TAINTS,
    Abort,
    ClaimPodHandle,
    Pending,
    assert_evicted,
    dra,
    evicted,
    eviction_in_progress,
    parse_time,
    pods,
    running_claim_pod,
    set_rule_effect,
    taint,
    timeouts,
    toleration,
    until,
    wait_dra,
)

pytestmark = [pytest.mark.taints, SINCE_DEVICE_TAINTS]

KEY = "example.com/broken"
# tolerationSeconds honoured (kubernetes#134434: before 1.35.0 the allocator dropped a claim's tolerations, so a
# tolerating pod was evicted at once), effect None and DeviceTaintRule status: all from 1.35.
SINCE_TOLERATIONS = pytest.mark.since("1.35", "tolerationSeconds honoured (kubernetes#134434), effect None, status")
# pkg/registry/resource/devicetaintrule/strategy.go PrepareForUpdate bumps spec.taint.timeAdded when the effect
# changes (and the client left timeAdded as it was): from v1.36.0; v1.35.8 keeps the creation time.
SINCE_TIME_ADDED_BUMP = pytest.mark.since("1.36", "DeviceTaintRule timeAdded bumped when the effect changes")

# The controller's eviction against timeAdded + tolerationSeconds: one second early for the two roundings, up to
# LATE_S late for the queue, the informers and the API writes on a busy machine.
EARLY_S, LATE_S = 1, 4
# maybeUpdateRuleStatus rewrites a rule's status at most every ruleStatusPeriod (10 s); handlePod and
# maybeDeletePod queue a status update that far ahead (workqueue.AddAfter(..., ruleStatusPeriod)).
RULE_STATUS_PERIOD = timeouts.DEVICE_TAINT_RULE_STATUS_PERIOD


def assert_evicted_at(pod, due, what, timeout):
    """The controller evicts `pod` within [due - EARLY_S, due + LATE_S] by its DisruptionTarget condition's time."""
    cond = assert_evicted(pod, timeout=timeout)
    off = (cond.last_transition_time - due).total_seconds()
    assert -EARLY_S <= off <= LATE_S, (
        f"{pod} evicted at {cond.last_transition_time:%H:%M:%S}, {off:+.0f}s from {what} ({due:%H:%M:%S}); "
        f"allowed {-EARLY_S:+d}s..{LATE_S:+d}s"
    )
    return cond


TOLERATION_S = 20
TAINTED_AGO_S = 12


@SINCE_TOLERATIONS
@pytest.mark.scenario("DT-X1", "DT-U3")
def test_pod_scheduled_onto_a_tainted_device_counts_toleration_from_time_added(dra_driver, dra_objects):
    """The device's NoExecute taint says it was added 12 s ago before the pod exists; the pod tolerates it for
    20 s and is scheduled onto it: evicted ~8 s after it was created (timeAdded + 20 s), not 20 s after it was
    scheduled. claimEvictionTime: taint.deviceTaint().TimeAdded + tolerationSeconds."""
    driver = dra_driver(devices=("dev-0",))
    time_added = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=TAINTED_AGO_S)
    driver.set_taints("dev-0", [taint(KEY, time_added=time_added)])  # published before the pod is created
    pod = dra_objects.claim_pod(
        "timing", driver, request={"tolerations": [toleration(KEY, seconds=TOLERATION_S)]}, keep=True
    )
    due = time_added + timedelta(seconds=TOLERATION_S)
    cond = assert_evicted_at(pod, due, "timeAdded + tolerationSeconds", timeout=TOLERATION_S + timeouts.CLAIM_POD_START)
    scheduled = next(c for c in pod.read().status.conditions if c.type == "PodScheduled")
    # Counted from the pod's start it would come TOLERATION_S after scheduling, at least TAINTED_AGO_S later.
    assert cond.last_transition_time < scheduled.last_transition_time + timedelta(seconds=TOLERATION_S - LATE_S), (
        f"{pod} scheduled at {scheduled.last_transition_time:%H:%M:%S}, evicted {cond.last_transition_time:%H:%M:%S}"
    )
    assert pod.allocated_devices() == ["dev-0"], f"{pod} ran on {pod.allocated_devices()}"


CANCELLED_TOLERATION_S = 20


@SINCE_TOLERATIONS
@pytest.mark.scenario("DT-X2", "DT-U4")
@pytest.mark.parametrize(("effect", "reason"), [("None", "NoEffect"), ("NoSchedule", "OtherEffect")])
def test_rule_changed_away_from_noexecute_cancels_the_eviction(kube, dra_driver, dra_objects, effect, reason):
    """A pod tolerates the NoExecute rule for 20 s; before that, the rule's effect becomes None or NoSchedule.
    handleRuleChange drops the rule from evictingRules and re-evaluates every allocated claim; handlePod then
    finds no eviction time and cancels (cancelWorkWithEvent: "Cancelling deletion"). A pending eviction not
    cancelled would fire at its deadline (maybeDeletePod, queued with AddAfter(timeAdded + tolerationSeconds -
    now)) and the controller has no periodic pod resync of its own, so the window lasts past the old deadline by
    ruleStatusPeriod, which also covers the status update queued for the rule."""
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(
        dra_objects, "timing", driver, tolerations=[toleration(KEY, seconds=CANCELLED_TOLERATION_S)]
    )
    rule = dra_objects.taint_rule(taint(KEY), driver=driver.config.driver_name, device=device)
    time_added = parse_time(dra_objects.get_rule(rule)["spec"]["taint"]["timeAdded"])
    # The controller has handled the rule (and re-evaluated the pod's claim) once its status counts the pod.
    obj = wait_dra.for_rule(
        kube,
        dra_objects,
        rule,
        lambda obj: eviction_in_progress(obj).get("reason") == "PodsPendingEviction",
        "to count the tolerating pod as pending",
        timeout=timeouts.TAINT_RULE_STATUS,
    )
    deadline = time_added + timedelta(seconds=CANCELLED_TOLERATION_S)
    assert datetime.now(UTC) < deadline - timedelta(seconds=3), (
        f"the rule's status came too late to change it before the deadline {deadline:%H:%M:%S}: {obj.get('status')}"
    )
    set_rule_effect(kube, dra_objects, rule, effect)
    event = pod.wait_event("Cancelling deletion", timeout=timeouts.TAINT_EVICTION)
    assert "DeviceTaintManagerEviction" in event, f"cancel event: {event}"
    window = (deadline - datetime.now(UTC)).total_seconds() + RULE_STATUS_PERIOD
    pod.stays(
        evicted,
        what=(
            f"not to be evicted after the rule's effect became {effect}: watched past the cancelled deadline "
            f"{deadline:%H:%M:%S} (timeAdded + {CANCELLED_TOLERATION_S}s) by ruleStatusPeriod"
        ),
        duration=window,
    )
    cond = eviction_in_progress(dra_objects.get_rule(rule))
    assert cond.get("reason") == reason, f"EvictionInProgress once the effect is {effect}: {cond}"


NONE_FOR_S = 20
SWITCHED_TOLERATION_S = 10


@SINCE_TIME_ADDED_BUMP
@pytest.mark.scenario("DT-X3", "DT-U6")
def test_rule_switched_to_noexecute_counts_toleration_from_the_switch(kube, dra_driver, dra_objects):
    """A rule with effect None for 20 s, then NoExecute; the pod tolerates it for 10 s, less than the rule's age.
    k8s.io/api resource/v1alpha3 types.go DeviceTaint.TimeAdded: "the time at which the taint was added or (only
    in a DeviceTaintRule) the effect was modified", and the API server replaces an unchanged timeAdded when the
    effect changes (strategy.go PrepareForUpdate). The controller counts from that timeAdded (trackedTaint
    .deviceTaint copies rule.Spec.Taint.TimeAdded): evicted 10 s after the switch, not at once."""
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(
        dra_objects, "timing", driver, tolerations=[toleration(KEY, seconds=SWITCHED_TOLERATION_S)]
    )
    rule = dra_objects.taint_rule(taint(KEY, "None"), driver=driver.config.driver_name, device=device)
    created = dra_objects.get_rule(rule)
    created_added = parse_time(created["spec"]["taint"]["timeAdded"])
    pod.stays(evicted, what="to stay under an effect-None rule", duration=NONE_FOR_S)
    set_rule_effect(kube, dra_objects, rule, "NoExecute")
    switched = dra_objects.get_rule(rule)
    time_added = parse_time(switched["spec"]["taint"]["timeAdded"])
    assert time_added >= created_added + timedelta(seconds=NONE_FOR_S - EARLY_S), (
        f"timeAdded after the switch {switched['spec']['taint']}, at creation {created['spec']['taint']}: "
        "the API server should have set it to the time of the effect change"
    )
    pod.stays(evicted, what="to stay while the toleration counted from the switch lasts", duration=3)
    assert_evicted_at(
        pod,
        time_added + timedelta(seconds=SWITCHED_TOLERATION_S),
        "the switch's timeAdded + tolerationSeconds",
        timeout=SWITCHED_TOLERATION_S + timeouts.TAINT_EVICTION,
    )


GRACE_S = 60


@SINCE_TOLERATIONS
@pytest.mark.scenario("DT-X4", "DT-U5")
def test_terminating_evicted_pod_is_not_pending_and_the_rule_completes(kube, namespace, dra_driver, dra_objects):
    """An evicted pod whose container ignores SIGTERM (sleep as PID 1) terminates only after its 60 s grace period,
    far longer than ruleStatusPeriod. countPendingPods skips pods with a deletionTimestamp, so the rule reaches
    Completed while the pod is still terminating."""
    driver = dra_driver(devices=("dev-0",))
    manifest = pods.pod_manifest(pods.unique_name("grace"), ["sleep", "86400"])
    manifest["spec"]["terminationGracePeriodSeconds"] = GRACE_S
    manifest = dra.with_claims(manifest, templates={"dev": dra_objects.template(driver.config.driver_name)})
    created = pods.create(kube, namespace, manifest)
    pod = ClaimPodHandle.of(kube, created, dra_objects.nodes, resource_api=dra_objects.api)
    try:
        pod.wait_running()
        rule = dra_objects.taint_rule(taint(KEY), driver=driver.config.driver_name, device=pod.allocated_devices()[0])
        assert_evicted(pod)
        seen = []

        def completed():
            current = pod.read_if_present()
            if current is None:
                raise Abort(f"{pod} is gone (its {GRACE_S}s grace period is over); rule conditions seen: {seen}")
            cond = eviction_in_progress(dra_objects.get_rule(rule))
            entry = (cond.get("reason"), cond.get("status"), cond.get("message"))
            if not seen or seen[-1] != entry:
                seen.append(entry)
            return entry if entry[0] == "Completed" else Pending(f"conditions seen: {seen}")

        # Two status periods: one may be spent on the update queued before the eviction.
        entry = until(
            completed,
            what=f"DeviceTaintRule {rule} to report Completed while {pod} terminates",
            timeout=2 * RULE_STATUS_PERIOD + LATE_S,
            interval=0.5,
        )
        assert entry == ("Completed", "False", "1 pod evicted since starting the controller."), seen
        current = pod.read_if_present()
        assert current is not None and current.metadata.deletion_timestamp is not None, (
            f"{pod} should still be terminating within its {GRACE_S}s grace period: {current and pods.summary(current)}"
        )
    finally:
        pod.force_delete()
