"""NoExecute eviction of every consumer of a shared claim (several entries in status.reservedFor).

The stale-entry cases reproduce kubernetes/kubernetes#135686: handlePods returned at the first stale
reservedFor entry (its pod gone, or replaced by one with a new UID) instead of continuing, so later
consumers were not evicted (v1.35.0 source; fixed from v1.36.0). To keep a stale entry in place long
enough, a ValidatingAdmissionPolicy bound to the test namespace denies the resourceclaim controller
(which would drop the entry at once) its status updates; it is removed after the test.

The taint rule comes only once the controller manager's shared pod informer has seen the first pod go: while
that informer still holds the pod, handlePods finds it, its UID matches, and the loop goes on to the later
consumers, so the bug cannot show (seen once on 1.33.13 on a loaded machine). The resourceclaim controller shares
that informer (cmd/kube-controller-manager/app/core.go: both take InformerFactory.Core().V1().Pods()) and tries
to drop the stale entry as soon as it sees the pod gone or replaced (pkg/controller/resourceclaim/controller.go
syncClaim): its first denied try, counted by the API server's policy metric, is that moment.
"""

import uuid

import pytest
from kubernetes import client

from device_conformance.framework import (
    SHARED_CLAIM_STALE_CONSUMER_EVICTION,
    SINCE_DEVICE_TAINTS,
    Pending,
    admission,
    assert_evicted,
    dra,
    pods,
    timeouts,
    until,
    wait_dra,
)

pytestmark = [pytest.mark.taints, SINCE_DEVICE_TAINTS]

KEY = "example.com/broken"
CLAIM_CONTROLLER = "system:serviceaccount:kube-system:resource-claim-controller"


def shared_claim_pods(dra_objects, driver, count, keep_first=True):
    """`count` running pods sharing one claim, created one after the other so reservedFor keeps their order
    -> (the claim's name, their handles)."""
    claim = dra_objects.claim(driver.config.driver_name)
    running = []
    for i in range(count):
        pod = dra_objects.claim_pod(f"share{i}", claim=claim, keep=keep_first or i > 0)
        pod.wait_running()
        running.append(pod)
    uids = [p.uid for p in running]
    running[0].wait_claim(lambda c: wait_dra.reserved_uids(c) == uids, f"reserved for {uids}")
    return claim, running


@pytest.mark.scenario("DT-U2")
def test_every_consumer_of_a_shared_claim_is_evicted(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    _, running = shared_claim_pods(dra_objects, driver, 3)
    dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name)
    for pod in running:
        assert_evicted(pod)


@pytest.fixture
def claim_controller_frozen(kube, namespace, dra_objects):
    """Deny the resourceclaim controller status updates of claims in this namespace; undone after the test."""
    name = f"dc-freeze-{namespace}"
    policy = admission.deny_user_policy(
        name, CLAIM_CONTROLLER, group="resource.k8s.io", resource="resourceclaims/status", operations=["UPDATE"]
    )
    admission.create(kube, policy, admission.namespace_binding(name, name, namespace))
    yield name
    admission.delete(kube, name, name)


def wait_stale_entry_seen(kube, policy, denied_before):
    """Until the resourceclaim controller has tried, and been denied, a status update of the claim: its pod
    informer, shared with the taint eviction controller, no longer holds the first pod."""

    def denied():
        denied_now = admission.denials(kube, policy)
        if denied_now > denied_before:
            return True
        return Pending(f"{denied_now} denials under policy {policy}, as before the first pod went")

    until(
        denied,
        what="the resourceclaim controller to try dropping the stale reservedFor entry (denied by the policy)",
        timeout=timeouts.STALE_RESERVATION_SEEN,
    )


def wait_policy_denies(kube, dra_objects, namespace, claim):
    """Policies take effect asynchronously: probe with a dry-run status update as the controller."""
    api = admission.impersonating(kube, CLAIM_CONTROLLER)
    custom = client.CustomObjectsApi(api)
    version = dra_objects.api.split("/")[1]

    def probe():
        try:
            custom.patch_namespaced_custom_object_status(
                "resource.k8s.io",
                version,
                namespace,
                "resourceclaims",
                claim,
                {"metadata": {"labels": {"dc-probe": uuid.uuid4().hex[:8]}}},
                dry_run="All",
            )
        except client.ApiException as exc:
            if "injected fault" in (exc.body or ""):
                return True
            return Pending(f"HTTP {exc.status}: {exc.body}")
        return Pending("the controller's status update is still allowed")

    try:
        until(
            probe,
            what="the admission policy to deny the resourceclaim controller",
            timeout=timeouts.ADMISSION_POLICY_ACTIVE,
        )
    finally:
        api.close()


@pytest.mark.known_bug(SHARED_CLAIM_STALE_CONSUMER_EVICTION)
@pytest.mark.scenario("DT-U2")
@pytest.mark.parametrize("stale", ["pod-gone", "pod-replaced"])
def test_consumers_after_a_stale_reservation_are_evicted(
    kube, namespace, dra_driver, dra_objects, claim_controller_frozen, stale
):
    driver = dra_driver(devices=("dev-0",))
    claim, (first, second) = shared_claim_pods(dra_objects, driver, 2, keep_first=False)
    wait_policy_denies(kube, dra_objects, namespace, claim)
    denied_before = admission.denials(kube, claim_controller_frozen)

    first.force_delete()
    first.wait_gone()
    if stale == "pod-replaced":  # same name, new UID, no claim
        pods.create(kube, namespace, pods.pod_manifest(first.name, ["sleep", "86400"]))
    state = dra_objects.get_claim(claim)
    assert wait_dra.reserved_uids(state) == [first.uid, second.uid], (
        "precondition: the first reservedFor entry must still name the deleted pod"
    )
    wait_stale_entry_seen(kube, claim_controller_frozen, denied_before)

    dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name)
    assert_evicted(second)
