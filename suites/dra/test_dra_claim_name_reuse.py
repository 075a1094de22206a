"""A claim that reuses the name of a force-deleted pod's claim, with a new UID, while the kubelet still holds the
old claim's entry: the kubelet refuses the new pod's prepare, naming the UID mismatch, and adds nothing of the new
pod to the old entry.

The claim info cache is keyed by namespace/name (pkg/kubelet/cm/dra/claiminfo.go claimInfoCache.get), so the new
claim finds the old claim's entry. prepareResources (pkg/kubelet/cm/dra/manager.go, module source v1.37.1)
checks the UID before anything else: `if claimInfo.ClaimUID != resourceClaim.UID { return fmt.Errorf("old
ResourceClaim with same name %s and different UID %s still exists (previous pod force-deleted?!)", ...) }`
(kubernetes#131513, PR #131617), before `claimInfo.addPodReference(pod.UID)` and the checkpoint; the kubelet
records the error as the pod's FailedPrepareDynamicResources event ("Failed to prepare dynamic resources: %v",
pkg/kubelet/kuberuntime/kuberuntime_manager.go, around PrepareResources' "prepare dynamic resources: %w").

test_dra_races.py (DRA-E7, slow) fails the old claim's NodeUnprepareResources and follows the new pod until it
runs (two kubelet retry cycles). The short path here holds the old claim's unprepare instead (a block fault), so
the old entry stays while the refusal is checked, and releasing the held call ends it at once; the new pod's
start, which waits for its resync, is left to DRA-E7.

An affected kubelet (module source v1.32.9 and v1.33.13 manager.go prepareResources: no UID comparison, an existing
entry gets `addPodReference` and, prepared, no NodePrepareResources) starts the new pod on the old claim's entry.
The released unprepare then deletes that entry (unprepareResources chose the claim while the old pod was its only
reference) and PrepareDynamicResources runs only before a sandbox is created
(pkg/kubelet/kuberuntime/kuberuntime_manager.go SyncPod): the driver ends up holding nothing and having unprepared
only the old claim, as with a fixed kubelet. After the release the bug shows in the new pod alone: it ran.

Proved against one-line breaks of a 1.37.1 tree (K8S_SOURCE; `pytest <this module> -n 1 -m ''
--k8s-source DIR --k8s-version 1.37.1`), each reverted afterwards (the same run passes):

- manager.go prepareResources: `if claimInfo.ClaimUID != resourceClaim.UID {` -> `if false && claimInfo.ClaimUID !=
  resourceClaim.UID {` (no UID comparison): the next guard, the old entry being unprepared (PR #140527), still
  refuses, but not for the UID: `AssertionError: the new pod a2885fff-…: ('refused', 'Failed to prepare dynamic
  resources: prepare dynamic resources: ResourceClaim reuse-13f247 is being unprepared')`
- manager.go prepareResources: the `} else {` of `if !exists {` -> `} else if false {` (an existing entry is taken
  as it is, whatever its UID or state): the new pod rides on the old claim's entry and runs:
  `AssertionError: the new pod 1faab2a0-…: ('started', 'phase=Running main: running restarts=0')`
"""

from typing import Any

import pytest

from device_conformance.framework import (
    FORCE_DELETED_CLAIM_NAME_REUSED,
    NODE_AUTHORIZER_LAG,
    PREPARE,
    SINCE_DRA,
    UNPREPARE,
    Pending,
    claim_record,
    dra,
    dra_checkpoint,
    make_claim,
    pods,
    timeouts,
    until,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]

REFUSAL = "FailedPrepareDynamicResources"


def refused_or_started(pod: Any) -> tuple[str, str]:
    """("refused", message) once the kubelet records a prepare refusal for this pod UID (not the node
    authorizer's lag, which a resync retries), ("started", summary) if a container runs first."""

    def probe() -> tuple[str, str] | Pending:
        events = pod.kube.core.list_namespaced_event(pod.namespace, field_selector=f"involvedObject.uid={pod.uid}")
        refusals = [e.message for e in events.items if e.reason == REFUSAL and NODE_AUTHORIZER_LAG not in e.message]
        if refusals:
            return ("refused", refusals[0])
        current = pod.read()
        if any(c.state.running for c in current.status.container_statuses or []):
            return ("started", pods.summary(current))
        return Pending(f"{pods.summary(current)}; events: {[f'{e.reason}: {e.message}' for e in events.items][-3:]}")

    return until(
        probe,
        what=f"a {REFUSAL} event of {pod} (uid {pod.uid}) or a running container",
        timeout=timeouts.CLAIM_POD_START,
    )


def started_containers(current: Any) -> list[str]:
    """The containers of a pod (a V1Pod) that ran: running now or ended."""
    return [c.name for c in current.status.container_statuses or [] if c.state.running or c.state.terminated]


def checkpointed(node: Any) -> list[tuple[str, str, list[str]]]:
    """(claim UID, claim name, pod UIDs) of each entry of the kubelet's dra_manager_state."""
    return [(e.claim_uid, e.claim_name, sorted(e.pod_uids or [])) for e in dra_checkpoint(node).entries or []]


@pytest.mark.scenario("DRA-X4", "DRA-E7")
@pytest.mark.known_bug(FORCE_DELETED_CLAIM_NAME_REUSED)
def test_new_claim_with_a_force_deleted_pods_claim_name_is_refused_naming_the_uid(
    node, dra_driver, dra_objects, shows_known_bug
):
    """Claim `reuse-…` (UID old) and pod `reuse-pod` run; NodeUnprepareResources is held, the pod force-deleted
    and the claim deleted. A new claim and pod of the same names: the new pod's first refusal is exactly the
    kubelet's UID-mismatch error naming the claim and the old UID, no container of it runs, the checkpoint keeps
    the old entry with the old pod only, and nothing is prepared for the new claim. Once the unprepare is released,
    no container of the new pod has run, the driver holds nothing, and only the old claim was unprepared."""
    driver = dra_driver(devices=("dev-0",))
    claim = f"reuse-{dra_objects.namespace[-6:]}"
    old_uid = make_claim(dra_objects, driver, claim)
    old = dra_objects.claim_pod("reuse", claim=claim, name="reuse-pod")
    old.wait_running()
    driver.block_unprepare()
    old.force_delete()
    dra.delete_claim(dra_objects.kube, dra_objects.api, dra_objects.namespace, claim)
    wait_dra.for_claim_gone(dra_objects.kube, dra_objects.api, dra_objects.namespace, claim)
    driver.wait_for_blocked(UNPREPARE, timeout=timeouts.UNPREPARE)

    new_uid = make_claim(dra_objects, driver, claim)
    assert new_uid != old_uid
    new = dra_objects.claim_pod("reuse", claim=claim, name="reuse-pod")
    assert new.uid != old.uid
    with shows_known_bug(FORCE_DELETED_CLAIM_NAME_REUSED):
        outcome = refused_or_started(new)
        expected = (
            "Failed to prepare dynamic resources: prepare dynamic resources: old ResourceClaim with same name "
            f"{claim} and different UID {old_uid} still exists (previous pod force-deleted?!)"
        )
        assert outcome == ("refused", expected), f"the new pod {new.uid}: {outcome}"
        entries = checkpointed(node)
        assert entries == [(old_uid, claim, [old.uid])], (
            f"the kubelet's checkpoint holds the old claim's entry, referenced by the old pod only: {entries}"
        )
        assert list(driver.prepared()) == [old_uid], "only the old claim is prepared"
        assert claim_record(driver.calls(PREPARE)) == [([old_uid], "ok")], "no prepare for the new claim"

    driver.unblock()
    driver.wait_for_call(UNPREPARE, ok=True, timeout=timeouts.UNPREPARE_RETRY)
    with shows_known_bug(FORCE_DELETED_CLAIM_NAME_REUSED):
        current = new.read()
        assert started_containers(current) == [], (
            f"the new pod {new.uid} ran though nothing prepared its claim: {pods.summary(current)}"
        )
        assert driver.prepared() == {}, "the old claim unprepared once released; the new one never prepared"
        unprepares = claim_record(driver.calls(UNPREPARE))
        assert {tuple(uids) for uids, _ in unprepares} == {(old_uid,)}, f"only the old claim unprepared: {unprepares}"
