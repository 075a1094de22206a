"""Black-box: kubelet restarts and crashes around a DRA driver, our fake or a vendor's (vendor mode).

What survives a kubelet restart is dra_manager_state (pkg/kubelet/cm/dra/state: the claim, its pods and the
devices and CDI IDs the driver answered, written before and after NodePrepareResources in
pkg/kubelet/cm/dra/manager.go prepareResources); a new kubelet unprepares from it the claims of pods deleted while
it was down (manager.go UnprepareResources via the pod worker's termination, and the reconcile loop). Call counts
are the new kubelet's own metric (dra_grpc_operations_duration_seconds_count, zero at each start). A claim's CDI
device IDs are read from that checkpoint while it is prepared (claim_cdi_ids; podresources lists claims from 1.34
only, kubernetes#132940). A claim prepared with no CDI device (dra/v1 api.proto allows it), or with only the driver's
own that may stay, leaves the CDI checks nothing to judge: they are recorded as not judged (note_cdi_not_judged).

Each test, the fake defect it fails on (fakes/dra_driver/config.py DEFECTS) and the failing line:
- test_kubelet_sigkilled_right_after_the_pod_is_created_runs_it_and_unprepares_once
    unprepare-keeps-cdi: `assert defined_cdi_ids(...) == []`
- test_pod_deleted_while_the_kubelet_is_down_is_unprepared_once_it_is_back
    unprepare-keeps-cdi: `assert defined_cdi_ids(...) == []`
- test_checkpoint_after_a_kubelet_restart_holds_the_claim_as_the_driver_answered
    prepare-first-device-only: `check_answered(...)` ("the checkpoint holds devices [...dev-0...], the claim is
    allocated [...dev-0..., ...dev-1...]"; a driver answering no devices passes with that check not judged, as
    DRA-PREPARE's note)
- test_sandbox_lost_after_a_kubelet_restart_prepares_the_claim_again
    prepare-rejects-repeat: `wait_new_container(...)`
"""

import pytest
from device_conformance.fixtures.dra_blackbox import (
    PRINT_ENV,
    allocated,
    cdi_env,
    check_answered,
    checkpointed,
    claim_cdi_ids,
    defined_cdi_ids,
    listed_claims,
    main_status,
    note_cdi_not_judged,
    seen_env,
    wait_new_container,
)

from device_conformance.framework import SINCE_PODRESOURCES_DRA, timeouts, wait

pytestmark = [pytest.mark.dra, pytest.mark.disruptive, pytest.mark.vendor_blackbox("dra-driver")]


def test_kubelet_sigkilled_right_after_the_pod_is_created_runs_it_and_unprepares_once(
    kube,
    node,
    answered_calls,
    dra_objects,
    subject_driver,
    cdi_runtime,
    kubelet_restored,
    tmp_path,
    startup_cdi_ids,
    request,
):
    """The kubelet SIGKILLed right after a claim pod is created (before, during or after its NodePrepareResources;
    a new kubelet may prepare the claim again): the pod runs, the checkpoint holds its claim, the container sees
    the claim's CDI environment; deleting the pod makes the new kubelet unprepare the claim exactly once, and its
    CDI devices are no longer defined."""
    driver = subject_driver.driver_name
    pod = dra_objects.claim_pod("sigkill", driver, PRINT_ENV)
    node.kubelet.crash()
    wait.for_node_ready(kube, node.name)
    pod.wait_running(timeout=timeouts.CLAIM_POD_START)
    uid = pod.claim_uid()
    assert list(checkpointed(node, driver)) == [uid], "dra_manager_state holds the pod's claim"
    ids = claim_cdi_ids(node, driver, uid)
    env = cdi_env(node, tmp_path / "cdi", ids)
    note_cdi_not_judged(request.node, f"claim {pod.claim_name()}", ids, startup=startup_cdi_ids, env=env)
    missing = set(env) - seen_env(pod)
    assert not missing, f"the container lacks {sorted(missing)} of CDI devices {ids}"
    prepared = answered_calls.since()[0]

    claim = pod.claim_name()
    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)
    answered_calls.wait(None, (prepared, 1), "the new kubelet, after the pod is gone")
    assert checkpointed(node, driver) == {}, "dra_manager_state still holds the claim after its pod is gone"
    assert defined_cdi_ids(node, tmp_path / "cdi", ids, startup_cdi_ids) == [], (
        "CDI devices still defined after NodeUnprepareResources"
    )
    pod.wait_claim_gone(claim)


def test_pod_deleted_while_the_kubelet_is_down_is_unprepared_once_it_is_back(
    node, answered_calls, dra_objects, subject_driver, kubelet_restored, tmp_path, startup_cdi_ids, request
):
    """A claim pod deleted while the kubelet is down stays (its containers run on) until the kubelet is back;
    the new kubelet then unprepares the claim exactly once and prepares nothing, the pod object goes, the
    checkpoint no longer holds the claim and its CDI devices are no longer defined."""
    driver = subject_driver.driver_name
    pod = dra_objects.claim_pod("deleted-down", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    ids = claim_cdi_ids(node, driver, uid)
    note_cdi_not_judged(request.node, f"claim {pod.claim_name()}", ids, startup=startup_cdi_ids)
    with node.kubelet.stopped():
        pod.delete()
        assert pod.read_if_present() is not None, "the pod object went while the kubelet was down"
    pod.wait_gone(timeout=timeouts.UNPREPARE_AFTER_RESTART)
    answered_calls.wait(None, (0, 1), "the new kubelet, after the pod is gone")
    assert uid not in checkpointed(node, driver), "dra_manager_state still holds the claim after its pod is gone"
    assert defined_cdi_ids(node, tmp_path / "cdi", ids, startup_cdi_ids) == [], (
        "CDI devices still defined after NodeUnprepareResources"
    )


@SINCE_PODRESOURCES_DRA
def test_checkpoint_after_a_kubelet_restart_holds_the_claim_as_the_driver_answered(
    node, answered_calls, dra_objects, subject_driver, kubelet_restored, request
):
    """For a running pod with a two-device claim, dra_manager_state holds the claim (name, namespace, the pod)
    with every allocated device (pool, device) and the CDI IDs podresources lists; after a kubelet restart it
    holds exactly the same, and the new kubelet makes no call to the driver for it."""
    driver = subject_driver.driver_name
    pod = dra_objects.claim_pod("checkpoint", driver, request={"count": 2})
    running = pod.wait_running()
    claim = pod.claim()
    uid = claim["metadata"]["uid"]
    held = checkpointed(node, driver)
    assert list(held) == [uid], f"dra_manager_state holds claims {list(held)} of {driver}, expected [{uid}]"
    entry = held[uid]
    assert (entry["name"], entry["namespace"], entry["pods"]) == (
        claim["metadata"]["name"],
        pod.namespace,
        [running.metadata.uid],
    ), f"the checkpoint's claim entry: {entry}"
    answered = [(driver, *d[:2]) for d in entry["devices"]]
    check_answered(request.node, answered, allocated(claim, driver), "the checkpoint")
    listed = listed_claims(pod)[claim["metadata"]["name"]]
    # As a set per claim: v1.37.1's podresources lists a second device with the CDI IDs of both
    # (GetDynamicResources keeps one CDI list per driver; test_dra_podresources' strict xfail).
    checkpoint_ids = sorted({i for d in entry["devices"] for i in d[2]})
    note_cdi_not_judged(request.node, f"claim {claim['metadata']['name']}", checkpoint_ids)
    assert checkpoint_ids == sorted({i for e in listed for i in e[3]}), (
        f"the checkpoint's CDI IDs {entry['devices']} differ from podresources' {listed}"
    )

    node.kubelet.restart()
    assert checkpointed(node, driver) == held, "dra_manager_state changed across the kubelet restart"
    assert listed_claims(pod)[claim["metadata"]["name"]] == listed, "podresources changed across the restart"
    assert answered_calls.since() == (0, 0), "the new kubelet called the driver for a running pod"


def test_sandbox_lost_after_a_kubelet_restart_prepares_the_claim_again(
    node, answered_calls, dra_objects, subject_driver, cdi_runtime, kubelet_restored, tmp_path, request
):
    """After a kubelet restart (the claim pod running on, not prepared by this kubelet) the pod's sandbox is
    removed: the kubelet creates a new one and, the claim not being prepared in its memory, calls
    NodePrepareResources for it again, exactly once, answered OK; the new container sees the claim's CDI
    environment."""
    driver = subject_driver.driver_name
    pod = dra_objects.claim_pod("sandbox", driver, PRINT_ENV, restart_policy="Always")
    pod.wait_running()
    ids = claim_cdi_ids(node, driver, pod.claim_uid())
    expected = set(cdi_env(node, tmp_path / "cdi", ids))
    note_cdi_not_judged(request.node, f"claim {pod.claim_name()}", ids, env=expected)
    old = main_status(pod).container_id

    node.kubelet.restart()
    sandboxes = [s.id for s in node.pod_sandboxes() if s.uid == pod.uid]
    assert len(sandboxes) == 1, f"the pod's sandboxes on the node: {sandboxes}"
    with node.transport.cri() as cri:
        cri.remove_sandbox(sandboxes[0])  # what a crashed sandbox leaves the kubelet to do: create a new one
    wait_new_container(pod, old, timeouts.PREPARE_RETRY_AT_RESYNC)
    assert answered_calls.since() == (1, 0), "the new kubelet prepares the claim once, unprepares none"
    missing = expected - seen_env(pod)
    assert not missing, f"the new container lacks {sorted(missing)} of CDI devices {ids}"
