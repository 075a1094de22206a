"""Tearing down a shared claim: the kubelet unprepares a claim when its last user goes, never while a pod it
prepared the claim for still runs.

The kubelet's DRA manager keeps, per claim, the pods it prepared it for (pkg/kubelet/cm/dra/claiminfo.go
PodUIDs; module source v1.37.1). prepareResources adds the pod only after its validation pass (every claim
fetched, reserved for the pod, its drivers registered), so a pod that fails that pass never becomes a user; when
it is deleted, unprepareResources must leave the claim alone (`hasPodReference`, PR #140212).
"""

import pytest

from device_conformance.framework import (
    PREPARE,
    SINCE_DRA,
    UNPREPARE,
    UNREFERENCED_POD_UNPREPARES_SHARED_CLAIM,
    ClaimPodHandle,
    claim_record,
    dra,
    pods,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


@pytest.mark.known_bug(UNREFERENCED_POD_UNPREPARES_SHARED_CLAIM)
def test_deleting_a_pod_that_never_got_the_claim_keeps_it_prepared(node, dra_driver, dra_objects, shows_known_bug):
    """kubernetes#140212: a pod bound to the node directly (spec.nodeName) names a running pod's claim and a
    claim that does not exist; its prepare fails on the missing claim before it takes a reference, and
    deleting it must not unprepare the claim the first pod runs on."""
    driver = dra_driver(devices=("dev-0",))
    claim = dra_objects.claim(driver.config.driver_name)
    first = dra_objects.claim_pod("first", claim=claim)
    first.wait_running()
    uid = first.claim_uid()

    missing = pods.unique_name("missing")
    manifest = pods.pod_manifest(pods.unique_name("stray"), ["sleep", "86400"], node_name=node.name)
    # The missing claim first: the kubelet's validation pass stops there, whatever it made of the shared one.
    manifest = dra.with_claims(manifest, claims={"missing": missing, "dev": claim})
    stray = ClaimPodHandle.of(
        dra_objects.kube,
        pods.create(dra_objects.kube, dra_objects.namespace, manifest),
        dra_objects.nodes,
        resource_api=dra_objects.api,
        shared_claim=claim,
    )
    event = stray.wait_prepare_refusal()
    assert f"fetch ResourceClaim {missing}" in event, f"the kubelet's refusal: {event}"
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared once, for the first pod"

    stray.delete()
    stray.wait_gone()
    # The stray pod's termination ran unprepareResources before its API object went (kubelet.go
    # syncTerminatingPod), so whatever it did to the driver is in the call log now.
    with shows_known_bug(UNREFERENCED_POD_UNPREPARES_SHARED_CLAIM):
        unprepared = claim_record(driver.calls(UNPREPARE))
        assert unprepared == [], f"no unprepare while the first pod runs on the claim, saw {unprepared}"
        assert list(driver.prepared()) == [uid], f"the first pod's claim stays prepared: {list(driver.prepared())}"
    first.read()  # still there: its containers are not touched either way

    first.delete()
    first.wait_gone()
    # An affected kubelet dropped the claim from its cache with the stray pod, so the first pod's own deletion
    # finds nothing to unprepare: one unprepare in all, on either release.
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "the claim unprepared once, with its user"
    assert list(driver.prepared()) == []
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "never prepared again"
