"""Kubelet restarts with claims in flight: what the dra_manager_state checkpoint must carry across."""

import pytest

from device_conformance import timeouts
from device_conformance.expectations.dra import FIRST_DRA_MINOR
from device_conformance.wait import kube as wait
from device_conformance.wait.core import stays

pytestmark = [
    pytest.mark.dra,
    pytest.mark.disruptive,
    pytest.mark.since(f"1.{FIRST_DRA_MINOR}", "resource.k8s.io/v1beta1, the oldest API the DRA objects fit"),
]


def claim_uids(calls):
    return [uid for call in calls for uid in call.claim_uids]


def running_claim_pod(driver, dra_objects):
    """A running pod with a claim from a template -> (its handle, the pod as it runs, the claim's UID)."""
    pod = dra_objects.claim_pod("restart", driver)
    running = pod.wait_running()
    return pod, running, pod.claim_uid()


@pytest.mark.scenario("DRA1")
def test_driver_registers_again_after_kubelet_restart(node, dra_driver, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    assert [r.ok for r in driver.registrations()] == [True, True]


def test_running_pod_claim_is_not_prepared_again_after_restart(kube, node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    pod, before, uid = running_claim_pod(driver, dra_objects)
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    wait.for_node_ready(kube, node.name)
    after = pod.wait_running()
    assert after.metadata.uid == before.metadata.uid
    assert after.status.container_statuses[0].restart_count == 0
    # The checkpoint says the claim is prepared: no second call, not even an idempotent one.
    stays(
        lambda: None if claim_uids(driver.calls("NodePrepareResources")) == [uid] else str(driver.calls()[-3:]),
        what="no further NodePrepareResources after the restart",
        duration=5,
    )
    assert driver.calls("NodeUnprepareResources") == []


@pytest.mark.slow  # the kubelet finds the orphaned claim in its reconcile loop, every 60 s
@pytest.mark.scenario("DRA11")
def test_pod_deleted_while_kubelet_is_down_is_unprepared_after_start(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    pod, _, uid = running_claim_pod(driver, dra_objects)
    with node.kubelet.stopped():
        pod.force_delete()
        pod.wait_gone()
        assert list(driver.prepared()) == [uid]

    driver.wait_for_call("NodeUnprepareResources", ok=True, timeout=timeouts.UNPREPARE_AFTER_RESTART)
    assert claim_uids(driver.calls("NodeUnprepareResources")) == [uid]
    assert driver.prepared() == {}


@pytest.mark.scenario("DRA8")
def test_failed_prepare_is_retried_after_kubelet_restart(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    driver.fail_prepare("injected prepare failure")
    pod = dra_objects.claim_pod("retry", driver)
    driver.wait_for_call("NodePrepareResources", ok=False)
    with node.kubelet.stopped():
        driver.clear_faults()
    pod.wait_running(timeout=timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART)
    assert driver.calls("NodePrepareResources")[-1].ok is True


@pytest.mark.scenario("DRA-T5")
def test_prepare_blocked_across_a_kubelet_restart(node, dra_driver, dra_objects, kubelet_restored):
    """The kubelet goes away while the driver holds NodePrepareResources; the new kubelet calls again."""
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.claim_pod("blocked", driver)
    driver.wait_for_blocked("NodePrepareResources")
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    driver.wait_for_blocked("NodePrepareResources")  # the restarted kubelet asks again
    driver.unblock()
    pod.wait_running(timeout=timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART)
    assert list(driver.prepared()) == [pod.claim_uid()]
    assert any(c.ok for c in driver.calls("NodePrepareResources"))


@pytest.mark.scenario("DRA12")
def test_pod_deleted_while_prepare_blocked_and_kubelet_down_is_not_prepared(
    node, dra_driver, dra_objects, kubelet_restored
):
    """Upstream DRA12 (#116411 family): after the restart the kubelet must not prepare a deleted pod's claim."""
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.claim_pod("gone", driver)
    driver.wait_for_blocked("NodePrepareResources")
    with node.kubelet.stopped():
        pod.force_delete()
        pod.wait_gone()
        driver.unblock()  # the held call ends (its client is gone); the log has it once it returned
        calls_before = len(driver.wait_for_call("NodePrepareResources", done=True))
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    stays(
        lambda: (
            None
            if len(driver.calls("NodePrepareResources")) == calls_before
            else str(driver.calls("NodePrepareResources")[-1])
        ),
        what="no NodePrepareResources for the deleted pod",
        duration=10,
    )
