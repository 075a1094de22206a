"""Kubelet restarts with claims in flight: what the dra_manager_state checkpoint must carry across."""

import pytest

from device_conformance.expectations.dra import CLAIM_POD_START_TIMEOUT
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait
from device_conformance.wait.core import stays

pytestmark = [pytest.mark.dra, pytest.mark.disruptive]

POD_TIMEOUT = CLAIM_POD_START_TIMEOUT
REGISTRATION_TIMEOUT = 30
UNPREPARE_TIMEOUT = 90
RETRY_TIMEOUT = 90


def claim_uids(calls):
    return [uid for call in calls for uid in call.claim_uids]


def running_claim_pod(kube, namespace, driver, dra_objects):
    pod = dra_objects.pod("restart", template=dra_objects.template(driver.config.driver_name))
    pod = wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    claim = dra_objects.get_claim(wait_dra.for_generated_claim(kube, namespace, pod.metadata.name, "dev"))
    return pod, claim["metadata"]["uid"]


def test_driver_registers_again_after_kubelet_restart(node, dra_driver, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=REGISTRATION_TIMEOUT)
    assert [r.ok for r in driver.registrations()] == [True, True]


def test_running_pod_claim_is_not_prepared_again_after_restart(
    kube, node, namespace, dra_driver, dra_objects, kubelet_restored
):
    driver = dra_driver(devices=("dev-0",))
    before, uid = running_claim_pod(kube, namespace, driver, dra_objects)
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=REGISTRATION_TIMEOUT)
    wait.for_node_ready(kube, node.name)
    after = wait.for_pod_running_ready(kube, namespace, before.metadata.name, timeout=POD_TIMEOUT)
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
def test_pod_deleted_while_kubelet_is_down_is_unprepared_after_start(
    kube, node, namespace, dra_driver, dra_objects, kubelet_restored
):
    driver = dra_driver(devices=("dev-0",))
    pod, uid = running_claim_pod(kube, namespace, driver, dra_objects)
    node.kubelet.stop()
    kube.core.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
    wait.for_pod_gone(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert list(driver.prepared()) == [uid]

    node.kubelet.start()
    driver.wait_for_call("NodeUnprepareResources", ok=True, timeout=UNPREPARE_TIMEOUT)
    assert claim_uids(driver.calls("NodeUnprepareResources")) == [uid]
    assert driver.prepared() == {}


def test_failed_prepare_is_retried_after_kubelet_restart(
    kube, node, namespace, dra_driver, dra_objects, kubelet_restored
):
    driver = dra_driver(devices=("dev-0",))
    driver.fail_prepare("injected prepare failure")
    pod = dra_objects.pod("retry", template=dra_objects.template(driver.config.driver_name))
    driver.wait_for_call("NodePrepareResources", ok=False)
    node.kubelet.stop()
    driver.clear_faults()
    node.kubelet.start()
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=RETRY_TIMEOUT)
    assert driver.calls("NodePrepareResources")[-1].ok is True


def test_prepare_blocked_across_a_kubelet_restart(kube, node, namespace, dra_driver, dra_objects, kubelet_restored):
    """The kubelet goes away while the driver holds NodePrepareResources; the new kubelet calls again."""
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.pod("blocked", template=dra_objects.template(driver.config.driver_name))
    driver.wait_for_blocked("NodePrepareResources")
    node.kubelet.restart()
    driver.wait_for_registration(count=2, timeout=REGISTRATION_TIMEOUT)
    driver.wait_for_blocked("NodePrepareResources")  # the restarted kubelet asks again
    driver.unblock()
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=RETRY_TIMEOUT)
    uid = dra_objects.get_claim(wait_dra.for_generated_claim(kube, namespace, pod.metadata.name, "dev"))["metadata"][
        "uid"
    ]
    assert list(driver.prepared()) == [uid]
    assert any(c.ok for c in driver.calls("NodePrepareResources"))


def test_pod_deleted_while_prepare_blocked_and_kubelet_down_is_not_prepared(
    kube, node, namespace, dra_driver, dra_objects, kubelet_restored
):
    """Upstream DRA12 (#116411 family): after the restart the kubelet must not prepare a deleted pod's claim."""
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.pod("gone", template=dra_objects.template(driver.config.driver_name))
    driver.wait_for_blocked("NodePrepareResources")
    node.kubelet.stop()
    kube.core.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
    wait.for_pod_gone(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    driver.unblock()  # the held call ends (its client is gone); the log has it once it returned
    calls_before = len(driver.wait_for_call("NodePrepareResources", done=True))
    node.kubelet.start()
    driver.wait_for_registration(count=2, timeout=REGISTRATION_TIMEOUT)
    stays(
        lambda: (
            None
            if len(driver.calls("NodePrepareResources")) == calls_before
            else str(driver.calls("NodePrepareResources")[-1])
        ),
        what="no NodePrepareResources for the deleted pod",
        duration=10,
    )
