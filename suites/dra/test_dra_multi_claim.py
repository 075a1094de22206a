"""Pods with several claims, claims with several requests, claims spanning two drivers: each driver gets one
NodePrepareResources per pod start with exactly its claims (also a claim no container names, DRA-E5), each
container sees exactly the devices of the claims and requests it names (DRA-E6), and a Prepare that failed
for one of the drivers is retried without duplicating the other driver's devices (kubernetes#140274)."""

import pytest
from device_conformance.fixtures.dra_pods import (
    allocation,
    claim_with_requests,
    claims_pod,
    device_key,
    expected_env,
    in_device_order,
    seen_env,
)

from device_conformance.framework import (
    ALREADY_PREPARED_CLAIM_SKIPS_THE_REST,
    PARTIAL_PREPARE_DUPLICATES_DEVICES,
    PREPARE,
    SINCE_DRA,
    UNPREPARE,
    ClaimResource,
    DynamicResource,
    Pending,
    claim_record,
    dra_checkpoint_entry,
    summarize,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


def by_call(calls):
    """claim_record with each call's claims as a set: the kubelet batches a driver's claims in no set order."""
    return [(sorted(uids), outcome) for uids, outcome in claim_record(calls)]


def by_call_tuples(calls):
    return [(tuple(uids), outcome) for uids, outcome in by_call(calls)]


def name_of(driver):
    return driver.config.driver_name


@pytest.mark.scenario("DRA-E5", "DRA-E6", "DRA-T1", "DRA-T4")
def test_each_container_sees_exactly_the_claims_and_requests_it_names(dra_driver, dra_objects, cdi_runtime):
    a = dra_driver(devices=("a-0", "a-1", "a-2"))
    b = dra_driver(devices=("b-0", "b-1"))
    pair = claim_with_requests(dra_objects, {"first": name_of(a), "second": name_of(b)})  # two drivers
    solo = claim_with_requests(dra_objects, {"only": name_of(a)})
    unused = claim_with_requests(dra_objects, {"only": name_of(b)})  # the pod's, but no container's
    pod = claims_pod(
        dra_objects,
        "multi",
        {"pair": pair, "solo": solo, "unused": unused},
        {"one": ["pair", "solo"], "two": ["pair/second"]},
    )
    pod.wait_running(timeout=timeouts.CLAIM_POD_START)
    uids = {claim: allocation(dra_objects, claim)[0] for claim in (pair, solo, unused)}

    assert seen_env(pod, "one") == sorted(expected_env(dra_objects, pair) + expected_env(dra_objects, solo))
    assert seen_env(pod, "two") == expected_env(dra_objects, pair, ["second"]), "only the request it names"
    # One call per driver for the pod's start, with every claim of that driver, used by a container or not.
    assert by_call(a.calls(PREPARE)) == [(sorted([uids[pair], uids[solo]]), "ok")]
    assert by_call(b.calls(PREPARE)) == [(sorted([uids[pair], uids[unused]]), "ok")]
    assert sorted(b.prepared()) == sorted([uids[pair], uids[unused]]), "the unused claim is prepared too"

    b.fail_unprepare("injected unprepare failure", times=1)
    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE_RETRY)
    b_claims = sorted([uids[pair], uids[unused]])
    assert by_call(b.calls(UNPREPARE)) == [(b_claims, "error UNKNOWN"), (b_claims, "ok")]
    a_claims = sorted([uids[pair], uids[solo]])
    # The kubelet retries the pod's whole unprepare, so driver a may be asked again: only ever for its claims.
    assert set(by_call_tuples(a.calls(UNPREPARE))) == {(tuple(a_claims), "ok")}, f"{by_call(a.calls(UNPREPARE))}"
    assert (a.prepared(), b.prepared()) == ({}, {})
    assert len(a.calls(PREPARE)) == len(b.calls(PREPARE)) == 1, "no NodePrepareResources after the pod's start"


@pytest.mark.scenario("DRA-E10")
def test_init_and_app_containers_both_see_the_claim_they_name(dra_driver, dra_objects, cdi_runtime):
    driver = dra_driver(devices=("dev-0",))
    claim = claim_with_requests(dra_objects, {"only": name_of(driver)})
    pod = claims_pod(dra_objects, "init", {"dev": claim}, {"main": ["dev"]}, init_containers={"init": ["dev"]})
    pod.wait_running(timeout=timeouts.CLAIM_POD_START)
    expected = expected_env(dra_objects, claim)
    assert seen_env(pod, "init") == expected, "the init container's DRA_ environment"
    assert seen_env(pod, "main") == expected, "the app container's DRA_ environment"
    uid = allocation(dra_objects, claim)[0]
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "one prepare for the init and the app container"


@pytest.mark.known_bug(ALREADY_PREPARED_CLAIM_SKIPS_THE_REST)
def test_pod_with_a_claim_another_pod_prepared_and_a_new_claim_gets_both(
    dra_driver, dra_objects, cdi_runtime, shows_known_bug
):
    """kubernetes#135901: the second pod names the first pod's claim (prepared) first, then a new claim; the
    kubelet must skip only the prepared one: one Prepare for the new claim, and the pod runs seeing both. Before
    the fix the new claim never reached the claim cache nor the driver, and the pod never started."""
    driver = dra_driver(devices=("dev-0", "dev-1"))
    shared = claim_with_requests(dra_objects, {"only": name_of(driver)})
    first = claims_pod(dra_objects, "first", {"shared": shared}, {"main": ["shared"]})
    first.wait_running(timeout=timeouts.CLAIM_POD_START)
    shared_uid = allocation(dra_objects, shared)[0]
    assert claim_record(driver.calls(PREPARE)) == [([shared_uid], "ok")]

    own = claim_with_requests(dra_objects, {"only": name_of(driver)})
    second = claims_pod(dra_objects, "second", {"shared": shared, "own": own}, {"main": ["shared", "own"]})
    with shows_known_bug(ALREADY_PREPARED_CLAIM_SKIPS_THE_REST):  # before the fix: never Running
        second.wait_running(timeout=timeouts.CLAIM_POD_START)
        own_uid = allocation(dra_objects, own)[0]
        assert claim_record(driver.calls(PREPARE)) == [([shared_uid], "ok"), ([own_uid], "ok")]
        assert seen_env(second) == sorted(expected_env(dra_objects, shared) + expected_env(dra_objects, own))
    # On every release: the first pod keeps running on its claim, prepared once.
    assert first.read().status.phase == "Running", f"{first}"
    assert claim_record(driver.calls(PREPARE))[0] == ([shared_uid], "ok")
    assert seen_env(first) == expected_env(dra_objects, shared)


def checkpoint_devices(node, uid):
    """driver -> [(pool, device, requests, CDI IDs)] of a claim in dra_manager_state."""
    drivers = dra_checkpoint_entry(node, uid).drivers or {}
    return {
        driver: [(d.pool_name, d.device_name, list(d.request_names), list(d.cdi_device_ids)) for d in devices or []]
        for driver, devices in drivers.items()
    }


def fail_the_driver_called_second(a, b):
    """Hold both drivers' Prepare; the one the kubelet calls first answers, the one it calls next fails once.
    The kubelet walks a pod's drivers one after the other in Go map order, a new order per attempt
    (pkg/kubelet/cm/dra/manager.go, `for plugin, claims := range batches`), and stops at the first failure: so
    whichever order it picks, one driver has prepared and the other failed. Returns (answered, failed)."""

    def first_held():
        held = [d for d in (a, b) if any(c.method == PREPARE for c in d.blocked_calls())]
        return held[0] if held else Pending(f"a: {summarize(a.calls())}; b: {summarize(b.calls())}")

    answered = until(first_held, what="the kubelet's first NodePrepareResources", timeout=timeouts.CLAIM_POD_START)
    failed = b if answered is a else a
    answered.unblock(PREPARE)
    answered.wait_for_call(PREPARE, 1, ok=True)
    failed.wait_for_blocked(PREPARE, timeout=timeouts.CLAIM_POD_START)
    failed.fail_prepare("injected prepare failure", times=1)
    failed.unblock(PREPARE)
    failed.wait_for_call(PREPARE, 1, ok=False)
    return answered, failed


@pytest.mark.slow  # the failed NodePrepareResources is retried at the pod resync, 60-90 s
@pytest.mark.scenario("DRA-T3")
@pytest.mark.known_bug(PARTIAL_PREPARE_DUPLICATES_DEVICES)
def test_prepare_failed_for_one_of_two_drivers_is_retried_without_duplicate_devices(
    node, dra_driver, dra_objects, cdi_runtime, shows_known_bug
):
    """kubernetes#140274: the driver that succeeded before the other failed answers again in the retry; its devices
    must replace, not add to, what the kubelet holds (checkpoint, podresources, the container's CDI devices)."""
    a = dra_driver(devices=("a-0",))
    b = dra_driver(devices=("b-0",))
    a.block_prepare()
    b.block_prepare()
    pair = claim_with_requests(dra_objects, {"first": name_of(a), "second": name_of(b)})
    pod = claims_pod(dra_objects, "partial", {"pair": pair}, {"main": ["pair"]})
    answered, failed = fail_the_driver_called_second(a, b)
    pod.wait_running(timeout=timeouts.PREPARE_RETRY_AT_RESYNC)
    uid = allocation(dra_objects, pair)[0]

    assert claim_record(failed.calls(PREPARE)) == [([uid], "error UNKNOWN"), ([uid], "ok")]
    # The claim is not prepared until both drivers answered: the retry asks both again.
    assert claim_record(answered.calls(PREPARE)) == [([uid], "ok"), ([uid], "ok")]
    answers = {d.config.driver_name: d.prepared()[uid]["devices"] for d in (a, b)}
    expected = {
        driver: [(x["pool_name"], x["device_name"], x["request_names"], x["cdi_device_ids"]) for x in devices]
        for driver, devices in answers.items()
    }
    claim_resources = sorted(
        (
            ClaimResource(driver, pool, device, tuple(ids))
            for driver, devices in expected.items()
            for pool, device, _, ids in devices
        ),
        key=device_key,
    )
    # Before the fix the first answer of the driver that answered stays and the retry's is appended: its device
    # twice in all three.
    with shows_known_bug(PARTIAL_PREPARE_DUPLICATES_DEVICES):
        held = checkpoint_devices(node, uid)
        assert held == expected, f"dra_manager_state holds each device once; it holds {held}"
        listed = pod.wait_podresources().container("main").dynamic_resources
        assert in_device_order(listed) == (DynamicResource(pair, pod.namespace, tuple(claim_resources)),), (
            "podresources, each once"
        )
        assert seen_env(pod) == expected_env(dra_objects, pair)
