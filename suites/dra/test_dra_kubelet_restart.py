"""Kubelet restarts with claims in flight: what the dra_manager_state checkpoint must carry across.

The two "no NodePrepareResources after the restart" verdicts hold for timeouts.DRA_NO_PREPARE_WINDOW
(upstream's retryTestTimeout). Their scenarios share one kubelet restart in the module fixture `restarted`,
before the module's first test, so the windows run while the module's other tests go on; the tests at the
end of the module collect the verdicts.
"""

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
    supports_dra,
    timeouts,
    wait,
    watch,
)

pytestmark = [pytest.mark.dra, pytest.mark.disruptive, SINCE_DRA]


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
class Restarted:
    """What the module fixture's kubelet restart left, with the windows that guard it already running."""

    running: DraDriverHandle  # its claim was prepared before the restart, its pod kept running
    running_pod: ClaimPodHandle
    running_before: client.V1Pod
    running_uid: str
    no_second_prepare: Watch
    deleted: DraDriverHandle  # its pod was deleted while NodePrepareResources was held and the kubelet down
    deleted_uid: str
    no_prepare_for_deleted: Watch


@pytest.fixture(scope="module", autouse=True)
def restarted(request, cluster, kube):
    """One kubelet restart for both scenarios of the module doc; the windows start once the kubelet is back."""
    if not supports_dra(cluster.k8s_version):
        yield None  # the module's since marker skips every test
        return
    shared = request.getfixturevalue("shared_dra")
    node, objects = shared.node, shared.objects

    running = shared.driver(devices=("dev-0",))
    running_pod, running_before, running_uid = running_pod_and_claim(running, objects)

    deleted = shared.driver(devices=("dev-0",))
    deleted.block_prepare()
    gone = objects.claim_pod("gone", deleted)
    # The first prepare of a new pod may be refused (node authorizer lag) and retried at the resync.
    deleted.wait_for_blocked(PREPARE, timeout=timeouts.CLAIM_POD_START)
    deleted_uid = gone.claim_uid()  # the kubelet checkpointed the claim before it called the driver
    try:
        with node.kubelet.stopped():
            gone.force_delete()
            gone.wait_gone()
            deleted.unblock()  # the held call ends (its client is gone); the log has it once it returned
            deleted.wait_for_call(PREPARE, done=True)
    finally:
        if not node.kubelet.healthy():
            node.kubelet.start()
    for driver in (running, deleted):
        driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    wait.for_node_ready(kube, node.name)

    no_second_prepare = calls_stay(
        running,
        {PREPARE: [([running_uid], "ok")], UNPREPARE: []},
        f"no further NodePrepareResources (nor any NodeUnprepareResources) for running claim {running_uid}",
    )
    no_prepare_for_deleted = calls_stay(
        deleted,
        {PREPARE: claim_record(deleted.calls(PREPARE))},
        f"no NodePrepareResources for claim {deleted_uid} of the pod deleted while the kubelet was down",
    )
    yield Restarted(
        running,
        running_pod,
        running_before,
        running_uid,
        no_second_prepare,
        deleted,
        deleted_uid,
        no_prepare_for_deleted,
    )
    no_second_prepare.cancel()
    no_prepare_for_deleted.cancel()


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


# The tests below collect the verdicts of the module fixture's windows; they stay at the end of the module so
# the windows overlap with the tests above.


def test_running_pod_claim_is_not_prepared_again_after_restart(restarted):
    after = restarted.running_pod.wait_running()
    before = restarted.running_before
    assert after.metadata.uid == before.metadata.uid, "the pod was replaced across the restart"
    restarts = [(c.name, c.restart_count) for c in after.status.container_statuses or []]
    assert restarts == [("main", 0)], f"containers (name, restarts) after the kubelet restart: {restarts}"
    # The checkpoint says the claim is prepared: no second call, not even an idempotent one.
    restarted.no_second_prepare.holds()


@pytest.mark.scenario("DRA12")
def test_pod_deleted_while_prepare_blocked_and_kubelet_down_is_not_prepared(restarted):
    """Upstream DRA12 (#116411 family): after the restart the kubelet must not prepare a deleted pod's claim;
    the claim it checkpointed before calling the driver (pkg/kubelet/cm/dra/manager.go prepareResources adds the
    pod to the claim's checkpoint entry first) is unprepared by its reconcile loop, the pod being gone."""
    restarted.no_prepare_for_deleted.holds()
    driver, uid = restarted.deleted, restarted.deleted_uid
    driver.wait_for_call(UNPREPARE, ok=True, timeout=timeouts.DRA_RECONCILE)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "the orphaned claim unprepared exactly once"
    assert driver.prepared() == {}, "the driver still holds the orphaned claim"
