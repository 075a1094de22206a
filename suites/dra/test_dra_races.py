"""Races between pods that share a claim name or a claim on the node: a new pod must never ride on a claim
the kubelet is unpreparing, nor on the kubelet's entry for an older claim of the same name.

Both checks follow the kubelet's DRA manager (pkg/kubelet/cm/dra/manager.go prepareResources, module source
v1.37.1): an existing cache entry with another UID ("old ResourceClaim with same name ... still exists",
kubernetes#131513, PR #131617) or one being unprepared ("ResourceClaim ... is being unprepared", PR #140527)
fails the prepare, and the pod worker retries it once the entry is gone.
"""

import math

import pytest

from device_conformance.framework import (
    FORCE_DELETED_CLAIM_NAME_REUSED,
    PREPARE,
    PREPARE_JOINS_UNPREPARING_CLAIM,
    SINCE_DRA,
    UNPREPARE,
    claim_record,
    dra,
    held_and_released,
    make_claim,
    timeouts,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


def no_container_started(current):
    """A stays() probe on a pod: what ran, if any container did."""
    running = [c.name for c in current.status.container_statuses or [] if c.state.running]
    return f"containers running: {running} ({current.status.phase})" if running else None


def assert_unprepared_only_while_held(unprepares, uid):
    """The claim's unprepare calls are the held ones. The pod worker's call is held; while it is, the DRA manager's
    reconcile loop (manager.go reconcileLoop, every DRA_RECONCILE_PERIOD) unprepares the force-deleted pod's claim
    too, without looking at whether it is being unprepared, and the kubelet retries a call its own deadline
    (DRA_CALL_TIMEOUT) cancelled. So a long hold sees more than one call: each must come during the hold and be
    answered at the release, and none after it, which would tear down the devices of the re-prepared claim."""
    assert {tuple(uids) for uids, _ in claim_record(unprepares)} == {(uid,)}, (
        f"unprepare calls for other claims than {uid}: {claim_record(unprepares)}"
    )
    problem = held_and_released(unprepares, caller_deadline=timeouts.DRA_CALL_TIMEOUT - 1)
    assert problem is None, f"the held unprepare: {problem}"
    ends = [c.ended_mono for c in unprepares if c.ended_mono is not None]
    hold = max(ends) - unprepares[0].started_mono
    cancelled = sum(1 for c in unprepares if not c.ok)
    most = 1 + cancelled + math.ceil(hold / timeouts.DRA_RECONCILE_PERIOD)
    assert len(unprepares) <= most, (
        f"{len(unprepares)} unprepare calls in a {hold:.1f} s hold, more than the pod worker's, its {cancelled} "
        f"retries and one per reconcile period ({most}): {claim_record(unprepares)}"
    )


@pytest.mark.slow  # ~90 s: the refused prepare is retried at the pod worker's next sync
@pytest.mark.known_bug(PREPARE_JOINS_UNPREPARING_CLAIM)
def test_pod_does_not_join_a_claim_while_it_is_unprepared(dra_driver, dra_objects, shows_known_bug):
    """kubernetes#140527: the last pod of a shared claim is force-deleted and NodeUnprepareResources is held;
    a new pod of the same claim (allocated again, same UID) must wait for the unprepare and get a prepare
    of its own, never run on the devices being torn down."""
    driver = dra_driver(devices=("dev-0",))
    claim = dra_objects.claim(driver.config.driver_name)
    first = dra_objects.claim_pod("first", claim=claim)
    first.wait_running()
    uid = first.claim_uid()
    driver.block_unprepare()
    first.force_delete()
    driver.wait_for_blocked(UNPREPARE, timeout=timeouts.UNPREPARE)

    second = dra_objects.claim_pod("second", claim=claim)
    second.wait_claim(lambda c: second.uid in wait_dra.reserved_uids(c), "to be reserved for the second pod")
    # An affected kubelet (1.36.4 here, under the 1.37.1 control plane) may refuse once, then starts the
    # container on the claim it is tearing down: the bug shows in the refusal or in what starts meanwhile.
    with shows_known_bug(PREPARE_JOINS_UNPREPARING_CLAIM):
        event = second.wait_prepare_refusal()
        assert f"ResourceClaim {claim} is being unprepared" in event, f"the kubelet's refusal: {event}"
        second.stays(no_container_started, what="to start nothing while its claim is unprepared", duration=5)
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "no prepare while the unprepare is held"

    driver.unblock()
    # The recovery the fix brings: the held unprepare completes, then the new pod gets a prepare of its own.
    # An affected kubelet cancels the held call (the claim is in use again) and never unprepares or prepares.
    with shows_known_bug(PREPARE_JOINS_UNPREPARING_CLAIM):
        driver.wait_for_call(UNPREPARE, ok=True, timeout=timeouts.UNPREPARE)
        second.wait_running(timeout=timeouts.PREPARE_RETRY_AT_RESYNC)
        unprepares = driver.calls(UNPREPARE)
        assert_unprepared_only_while_held(unprepares, uid)
        prepares = driver.calls(PREPARE)
        assert claim_record(prepares) == [([uid], "ok"), ([uid], "ok")], "prepared again for the pod"
        last_unprepare = max(c.ended_mono for c in unprepares)
        assert prepares[1].started_mono >= last_unprepare, (
            f"the second prepare started {last_unprepare - prepares[1].started_mono:.3f} s before the unprepare ended"
        )
        assert list(driver.prepared()) == [uid], "the second pod runs on a prepared claim"


@pytest.mark.slow  # two kubelet retry cycles: the failed unprepare, then the refused prepare
@pytest.mark.scenario("DRA-E7")
@pytest.mark.known_bug(FORCE_DELETED_CLAIM_NAME_REUSED)
def test_force_deleted_pods_old_claim_blocks_a_new_claim_of_the_same_name(dra_driver, dra_objects, shows_known_bug):
    """kubernetes#131513: pod and claim force-deleted while NodeUnprepareResources fails; a new claim and
    pod with the same names must wait until the old claim is unprepared, then only the new one is
    prepared."""
    driver = dra_driver(devices=("dev-0",))
    claim = f"same-{dra_objects.namespace[-6:]}"
    old_uid = make_claim(dra_objects, driver, claim)
    old = dra_objects.claim_pod("same", claim=claim, name="same-name")
    old.wait_running()
    driver.fail_unprepare("injected unprepare failure")
    old.force_delete()
    dra.delete_claim(dra_objects.kube, dra_objects.api, dra_objects.namespace, claim)
    wait_dra.for_claim_gone(dra_objects.kube, dra_objects.api, dra_objects.namespace, claim)
    driver.wait_for_call(UNPREPARE, ok=False, timeout=timeouts.UNPREPARE)

    new_uid = make_claim(dra_objects, driver, claim)
    assert new_uid != old_uid
    new = dra_objects.claim_pod("same", claim=claim, name="same-name")
    # An affected kubelet (1.33.13 here, under the 1.34.10 control plane) starts the new pod on the old claim's
    # preparation: the bug shows in the refusal or in what starts meanwhile, and in the missing recovery.
    with shows_known_bug(FORCE_DELETED_CLAIM_NAME_REUSED):
        event = new.wait_prepare_refusal()
        expected = f"old ResourceClaim with same name {claim} and different UID {old_uid} still exists"
        assert expected in event, f"the kubelet's refusal: {event}"
        new.stays(no_container_started, what="to start nothing while the old claim is prepared", duration=5)
    assert list(driver.prepared()) == [old_uid], "only the old claim is prepared"
    assert claim_record(driver.calls(PREPARE)) == [([old_uid], "ok")], "no prepare for the new claim yet"

    driver.clear_faults()
    new.wait_running(timeout=timeouts.UNPREPARE_RETRY + timeouts.PREPARE_RETRY_AT_RESYNC)
    with shows_known_bug(FORCE_DELETED_CLAIM_NAME_REUSED):
        assert list(driver.prepared()) == [new_uid], "the new claim, and only it, is prepared"
        assert claim_record(driver.calls(PREPARE)) == [([old_uid], "ok"), ([new_uid], "ok")]
        unprepares = [(uids, outcome) for uids, outcome in claim_record(driver.calls(UNPREPARE)) if outcome == "ok"]
        assert unprepares == [([old_uid], "ok")], "the old claim unprepared once it could be"
