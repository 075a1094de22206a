"""Black-box: claims shared, several, recreated and of pods that never start, with a DRA driver our fake's or a
vendor's (vendor mode).

The kubelet prepares a claim once per node whatever number of pods use it and unprepares it when its last pod is
gone (pkg/kubelet/cm/dra/manager.go: ClaimInfo pod references, unprepareResources only without any); it sends
one NodePrepareResources per driver with every claim of a pod (manager.go prepareResources, batches per driver);
it prepares before the sandbox, whatever becomes of the containers, and unprepares on the pod's termination.
The driver's part: its CDI specs of a claim are gone once the claim is unprepared (k8s.io/kubelet/pkg/apis/dra/v1
api.proto, NodeUnprepareResources "is the opposite of NodePrepareResources"; certify clause DRA-UNPREPARE-CDI).
A claim's CDI device IDs are read from the kubelet's DRA checkpoint while it is prepared (claim_cdi_ids: on every
release with DRA); podresources, which lists claims from 1.34 only (kubernetes#132940), is compared where it does.
A claim prepared with no CDI device (dra/v1 api.proto allows it), or with only the driver's own that may stay,
leaves the CDI checks nothing to judge: they are recorded as not judged (note_cdi_not_judged), the rest is judged.

Each test, the fake defect it fails on (fakes/dra_driver/config.py DEFECTS) and the failing line:
- test_two_pods_share_one_claim_prepared_once_unprepared_after_the_last
    unprepare-keeps-cdi: `assert defined_cdi_ids(...) == []`
- test_two_claims_in_one_pod_are_prepared_in_one_call_and_unprepared_together
    unprepare-keeps-cdi: `assert defined_cdi_ids(...) == []`
- test_template_claim_pod_recreated_gets_a_new_claim_prepared_once
    unprepare-keeps-cdi: `assert defined_cdi_ids(...) == []`
- test_pod_whose_container_cannot_start_unprepares_its_claim_on_delete
    unprepare-keeps-cdi: `assert defined_cdi_ids(...) == []`
"""

import pytest
from device_conformance.fixtures.dra_blackbox import (
    MISSING_IMAGE,
    PRINT_ENV,
    cdi_env,
    cdi_ids,
    checkpointed,
    claim_cdi_ids,
    claim_pod_with_image,
    defined_cdi_ids,
    listed_claims,
    note_cdi_not_judged,
    podresources_lists_claims,
    seen_env,
    undefined_cdi_ids,
)
from device_conformance.fixtures.dra_pods import claims_pod

from device_conformance.framework import ClaimPodHandle, Pending, timeouts, wait_dra

pytestmark = [pytest.mark.dra, pytest.mark.vendor_blackbox("dra-driver")]


def test_two_pods_share_one_claim_prepared_once_unprepared_after_the_last(
    node, answered_calls, dra_objects, subject_driver, tmp_path, startup_cdi_ids, cluster_versions, request
):
    """Two pods using one ResourceClaim: one NodePrepareResources for both (podresources lists the same CDI devices
    for both, where it lists claims); the first pod deleted, the claim stays prepared (no call, the checkpoint
    holds it for the second pod alone, its CDI devices still defined); the second deleted, exactly one
    NodeUnprepareResources and the CDI devices are no longer defined."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    claim = dra_objects.claim(driver)
    first = dra_objects.claim_pod("share-a", claim=claim)
    first.wait_running()
    # Only then: pods starting together may each reach NodePrepareResources before either call returned.
    second = dra_objects.claim_pod("share-b", claim=claim)
    second.wait_running()
    uid = first.claim_uid()
    assert answered_calls.since(before) == (1, 0), "one NodePrepareResources for the shared claim"
    ids = claim_cdi_ids(node, driver, uid)
    note_cdi_not_judged(request.node, f"claim {claim}", ids, startup=startup_cdi_ids)
    if podresources_lists_claims(cluster_versions.kubelet):
        listed_first = cdi_ids(listed_claims(first))
        assert cdi_ids(listed_claims(second)) == listed_first, "podresources lists other CDI devices for the second pod"

    first.delete()
    first.wait_gone(timeout=timeouts.UNPREPARE)
    assert answered_calls.since(before) == (1, 0), "a call to the driver while a pod still uses it"
    held = checkpointed(node, driver)
    assert list(held) == [uid] and held[uid]["pods"] == [second.uid], f"dra_manager_state after the first pod: {held}"
    assert undefined_cdi_ids(node, tmp_path / "cdi", ids) == [], "CDI devices gone while a pod still uses the claim"

    second.delete()
    second.wait_gone(timeout=timeouts.UNPREPARE)
    answered_calls.wait(before, (1, 1), "after the last pod is gone")
    assert checkpointed(node, driver) == {}, "dra_manager_state still holds the claim after its last pod"
    assert defined_cdi_ids(node, tmp_path / "cdi", ids, startup_cdi_ids) == [], (
        "CDI devices still defined after NodeUnprepareResources"
    )


def test_two_claims_in_one_pod_are_prepared_in_one_call_and_unprepared_together(
    node, answered_calls, dra_objects, subject_driver, cdi_runtime, tmp_path, startup_cdi_ids, cluster_versions, request
):
    """A pod with two ResourceClaims of the driver (one device each) runs after exactly one NodePrepareResources
    (both claims in it); podresources lists both for the container (where it lists claims); the container sees
    the CDI environment of both; deleting the pod makes exactly one NodeUnprepareResources and both claims' CDI
    devices are no longer defined."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    claims = {"one": dra_objects.claim(driver), "two": dra_objects.claim(driver)}
    pod = claims_pod(dra_objects, "two-claims", claims, {"main": ["one", "two"]}, command=PRINT_ENV)
    wait_dra.for_claim_pod_running(pod.kube, pod.namespace, pod.name)
    assert answered_calls.since(before) == (1, 0), "one NodePrepareResources for the pod's claims"
    if podresources_lists_claims(cluster_versions.kubelet):
        listed = listed_claims(pod)
        assert sorted(listed) == sorted(claims.values()), f"podresources lists claims {sorted(listed)}"
    uids = sorted(dra_objects.get_claim(c)["metadata"]["uid"] for c in claims.values())
    assert sorted(checkpointed(node, driver)) == uids, "dra_manager_state holds both claims"
    ids = list(dict.fromkeys(i for uid in uids for i in claim_cdi_ids(node, driver, uid)))
    env = cdi_env(node, tmp_path / "cdi", ids)
    note_cdi_not_judged(request.node, f"claims {sorted(claims.values())}", ids, startup=startup_cdi_ids, env=env)
    missing = set(env) - seen_env(pod)
    assert not missing, f"the container lacks {sorted(missing)} of CDI devices {ids}"

    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)
    answered_calls.wait(before, (1, 1), "after the pod is gone")
    assert checkpointed(node, driver) == {}, "dra_manager_state still holds a claim after its pod is gone"
    assert defined_cdi_ids(node, tmp_path / "cdi", ids, startup_cdi_ids) == [], (
        "CDI devices still defined after NodeUnprepareResources"
    )


def test_template_claim_pod_recreated_gets_a_new_claim_prepared_once(
    node, answered_calls, dra_objects, subject_driver, tmp_path, startup_cdi_ids, request
):
    """A pod with a claim from a template, deleted and created again under the same name from the same template:
    the first claim is unprepared once and deleted, its CDI devices gone; the new pod gets a new claim (another
    UID), prepared exactly once, the only one the checkpoint holds."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    template = dra_objects.template(driver)

    def created(name=None):
        made = dra_objects.pod("recreated", template=template, name=name)
        return ClaimPodHandle.of(dra_objects.kube, made, dra_objects.nodes, resource_api=dra_objects.api)

    first = created()
    first.wait_running()
    first_claim, first_uid = first.claim_name(), first.claim_uid()
    ids = claim_cdi_ids(node, driver, first_uid)
    note_cdi_not_judged(request.node, f"claim {first_claim}", ids, startup=startup_cdi_ids)
    first.delete()
    first.wait_gone(timeout=timeouts.UNPREPARE)
    first.wait_claim_gone(first_claim)
    answered_calls.wait(before, (1, 1), "after the first pod is gone")
    assert defined_cdi_ids(node, tmp_path / "cdi", ids, startup_cdi_ids) == [], (
        "CDI devices still defined after NodeUnprepareResources"
    )

    second = created(first.name)
    second.wait_running()
    second_uid = second.claim_uid()
    assert second_uid != first_uid, f"the recreated pod got the deleted claim {first_uid} again"
    assert answered_calls.since(before) == (2, 1), "one NodePrepareResources for the new claim"
    assert list(checkpointed(node, driver)) == [second_uid], "dra_manager_state holds the new claim alone"


def test_pod_whose_container_cannot_start_unprepares_its_claim_on_delete(
    node, answered_calls, dra_objects, subject_driver, tmp_path, startup_cdi_ids, request
):
    """A claim pod whose image the node does not have (never pulled): the claim is prepared once before the
    sandbox and the pod stays Pending (ErrImageNeverPull); deleting it makes exactly one NodeUnprepareResources,
    the checkpoint no longer holds the claim and its CDI devices are no longer defined."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    pod = claim_pod_with_image(dra_objects, "no-image", driver, MISSING_IMAGE)

    def waiting():
        current = pod.read()
        reasons = [s.state.waiting.reason for s in current.status.container_statuses or [] if s.state.waiting]
        return reasons if reasons == ["ErrImageNeverPull"] else Pending(pod.summary())

    pod.wait_while_preparing(waiting, f"{pod} to wait with ErrImageNeverPull")
    assert answered_calls.since(before) == (1, 0), "one NodePrepareResources before the sandbox"
    uid = pod.claim_uid()
    assert list(checkpointed(node, driver)) == [uid], "dra_manager_state holds the pod's claim"
    ids = claim_cdi_ids(node, driver, uid)
    note_cdi_not_judged(request.node, f"claim {pod.claim_name()}", ids, startup=startup_cdi_ids)
    assert pod.read().status.phase == "Pending", pod.summary()

    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)
    answered_calls.wait(before, (1, 1), "after the pod is gone")
    assert checkpointed(node, driver) == {}, "dra_manager_state still holds the claim after its pod is gone"
    assert defined_cdi_ids(node, tmp_path / "cdi", ids, startup_cdi_ids) == [], (
        "CDI devices still defined after NodeUnprepareResources"
    )
