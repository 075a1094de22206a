"""Kubelet restarts with claims in flight: what the dra_manager_state checkpoint must carry across.

The two "no NodePrepareResources after the restart" verdicts hold for timeouts.DRA_NO_PREPARE_WINDOW
(upstream's retryTestTimeout). Each scenario's window is a module fixture, and the `overlapping` marker starts
both before the module's first test, so the windows run while the module's other tests go on. Both are built
on one kubelet restart (`kubelet_restart_with_claims_in_flight`): each scenario needs its claim in flight
before the restart and its window after it, and a restart apiece would cost the module a second one.
"""

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from kubernetes import client

from device_conformance.framework import (
    PREPARE,
    SINCE_DRA,
    UNPREPARE,
    ClaimPodHandle,
    DraDriverHandle,
    Watch,
    claim_record,
    prepare_held_across,
    timeouts,
    wait,
    watch,
)

pytestmark = [
    pytest.mark.dra,
    pytest.mark.disruptive,
    SINCE_DRA,
    pytest.mark.overlapping("running_claim_not_prepared_again", "deleted_pods_claim_not_prepared"),
]


def running_pod_and_claim(driver, dra_objects):
    """A running pod with a claim from a template -> (its handle, the pod as it runs, the claim's UID)."""
    pod = dra_objects.claim_pod("restart", driver)
    running = pod.wait_running()
    return pod, running, pod.claim_uid()


def calls_stay(driver: DraDriverHandle, expected: dict[str, list[tuple[list[str], str]]], what: str) -> Watch:
    """A window in which the driver's claim calls stay exactly `expected` (method -> claim_record)."""

    def probe() -> str | None:
        seen = {method: claim_record(driver.calls(method)) for method in expected}
        return None if seen == expected else f"calls {seen}, expected {expected}"

    return watch(probe, what=what, duration=timeouts.DRA_NO_PREPARE_WINDOW)


@dataclass
class RunningClaim:
    """A pod running with a claim from a template, prepared before the module's kubelet restart."""

    driver: DraDriverHandle
    pod: ClaimPodHandle
    before: client.V1Pod  # the pod as it ran before the restart
    uid: str


@pytest.fixture(scope="module")
def running_claim(shared_dra) -> RunningClaim:
    """A pod running with its claim prepared, before the module's kubelet restart."""
    driver = shared_dra.driver(devices=("dev-0",))
    return RunningClaim(driver, *running_pod_and_claim(driver, shared_dra.objects))


@dataclass
class HeldClaim:
    """A pod whose claim's NodePrepareResources the driver holds: checkpointed by the kubelet, not prepared."""

    driver: DraDriverHandle
    pod: ClaimPodHandle
    uid: str

    def delete_pod_and_release_prepare(self) -> None:
        """While the kubelet is down: the pod goes, and the held call ends (its client is gone)."""
        self.pod.force_delete()
        self.pod.wait_gone()
        self.driver.unblock()
        self.driver.wait_for_call(PREPARE, done=True)  # the log has the call once it returned


@pytest.fixture(scope="module")
def claim_held_in_prepare(shared_dra) -> HeldClaim:
    """A pod whose claim's NodePrepareResources is held, before the module's kubelet restart."""
    driver = shared_dra.driver(devices=("dev-0",))
    driver.block_prepare()
    pod = shared_dra.objects.claim_pod("gone", driver)
    # The first prepare of a new pod may be refused (node authorizer lag) and retried at the resync.
    driver.wait_for_blocked(PREPARE, timeout=timeouts.CLAIM_POD_START)
    return HeldClaim(driver, pod, pod.claim_uid())  # the kubelet checkpointed the claim before it called the driver


@pytest.fixture(scope="module")
def kubelet_restart_with_claims_in_flight(shared_dra, kube, running_claim, claim_held_in_prepare) -> None:
    """The one kubelet restart both scenarios judge; the held claim's pod is deleted while the kubelet is down."""
    node = shared_dra.node
    try:
        with node.kubelet.stopped():
            claim_held_in_prepare.delete_pod_and_release_prepare()
    finally:
        if not node.kubelet.healthy():
            node.kubelet.start()
    for driver in (running_claim.driver, claim_held_in_prepare.driver):
        driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    wait.for_node_ready(kube, node.name)


@pytest.fixture(scope="module")
def running_claim_not_prepared_again(running_claim, kubelet_restart_with_claims_in_flight) -> Iterator[Watch]:
    """The window after the restart in which the running claim gets no call at all."""
    uid = running_claim.uid
    window = calls_stay(
        running_claim.driver,
        {PREPARE: [([uid], "ok")], UNPREPARE: []},
        f"no further NodePrepareResources (nor any NodeUnprepareResources) for running claim {uid}",
    )
    yield window
    window.cancel()


@pytest.fixture(scope="module")
def deleted_pods_claim_not_prepared(claim_held_in_prepare, kubelet_restart_with_claims_in_flight) -> Iterator[Watch]:
    """The window after the restart in which the deleted pod's claim gets no NodePrepareResources."""
    driver = claim_held_in_prepare.driver
    window = calls_stay(
        driver,
        {PREPARE: claim_record(driver.calls(PREPARE))},
        f"no NodePrepareResources for claim {claim_held_in_prepare.uid} of the pod deleted while the kubelet was down",
    )
    yield window
    window.cancel()


@pytest.mark.scenario("DRA1")
def test_driver_registers_again_after_kubelet_restart(node, dra_driver, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    oks = [r.ok for r in driver.registrations()]
    assert oks == [True, True], f"registration verdicts of the kubelet: {driver.registrations()}"


@pytest.mark.slow  # the kubelet finds the orphaned claim in its reconcile loop, every 60 s
@pytest.mark.scenario("DRA11")
def test_pod_deleted_while_kubelet_is_down_is_unprepared_after_start(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    pod, _, uid = running_pod_and_claim(driver, dra_objects)
    with node.kubelet.stopped():
        pod.force_delete()
        pod.wait_gone()
        assert list(driver.prepared()) == [uid]

    driver.wait_for_call(UNPREPARE, ok=True, timeout=timeouts.UNPREPARE_AFTER_RESTART)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "unprepared exactly once"
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared once, for the pod's only start"
    assert driver.prepared() == {}


@pytest.mark.scenario("DRA8")
def test_failed_prepare_is_retried_after_kubelet_restart(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    driver.fail_prepare("injected prepare failure")
    pod = dra_objects.claim_pod("retry", driver)
    # The first prepare of a new pod may be refused (node authorizer lag) and retried at the resync.
    driver.wait_for_call(PREPARE, ok=False, timeout=timeouts.CLAIM_POD_START)
    with node.kubelet.stopped():
        driver.clear_faults()
        failed = len(driver.calls(PREPARE))
    pod.wait_running(timeout=timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART)
    uid = pod.claim_uid()
    # Failed calls before the restart (the pod worker may have retried), then exactly one that succeeded.
    expected = [([uid], "error UNKNOWN")] * failed + [([uid], "ok")]
    assert claim_record(driver.calls(PREPARE)) == expected, "one successful NodePrepareResources after the restart"


@pytest.mark.scenario("DRA-T5")
def test_prepare_blocked_across_a_kubelet_restart(node, dra_driver, dra_objects, kubelet_restored):
    """The kubelet goes away while the driver holds NodePrepareResources; the new kubelet calls again."""
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.claim_pod("blocked", driver)
    uid = prepare_held_across(driver, pod, node.kubelet.restart)
    assert list(driver.prepared()) == [uid]
    # One call per kubelet: the old one's (held, then released) and the new one's, which started the pod.
    calls = driver.calls(PREPARE)
    assert [c.claim_uids for c in calls] == [[uid], [uid]], f"NodePrepareResources calls: {claim_record(calls)}"
    assert calls[-1].ok, f"the restarted kubelet's NodePrepareResources did not succeed: {claim_record(calls)}"


# The windows' verdicts: last in the module only for its wall time, each waits for what is left of its window.


def test_running_pod_claim_is_not_prepared_again_after_restart(running_claim, running_claim_not_prepared_again):
    after = running_claim.pod.wait_running()
    before = running_claim.before
    assert after.metadata.uid == before.metadata.uid, "the pod was replaced across the restart"
    restarts = [(c.name, c.restart_count) for c in after.status.container_statuses or []]
    assert restarts == [("main", 0)], f"containers (name, restarts) after the kubelet restart: {restarts}"
    # The checkpoint says the claim is prepared: no second call, not even an idempotent one.
    running_claim_not_prepared_again.holds()


@pytest.mark.scenario("DRA12")
def test_pod_deleted_while_prepare_blocked_and_kubelet_down_is_not_prepared(
    claim_held_in_prepare, deleted_pods_claim_not_prepared
):
    """Upstream DRA12 (#116411 family): after the restart the kubelet must not prepare a deleted pod's claim;
    the claim it checkpointed before calling the driver (pkg/kubelet/cm/dra/manager.go prepareResources adds the
    pod to the claim's checkpoint entry first) is unprepared by its reconcile loop, the pod being gone."""
    deleted_pods_claim_not_prepared.holds()
    driver, uid = claim_held_in_prepare.driver, claim_held_in_prepare.uid
    driver.wait_for_call(UNPREPARE, ok=True, timeout=timeouts.DRA_RECONCILE)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "the orphaned claim unprepared exactly once"
    assert driver.prepared() == {}, "the driver still holds the orphaned claim"
