"""What a user sees when the device-taint eviction controller evicts a pod: the pod's DisruptionTarget condition,
its deletion and the controller's event. One check for every taint suite, so they cannot drift apart."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.framework.handles import ClaimPodHandle, PodHandle
from device_conformance.kube import pods

# pkg/controller/devicetainteviction/device_taint_eviction.go: the condition it adds and the event it records
# (addConditionAndDeletePod, the same strings from the first release with device taints, kubernetes#130447).
EVICTION_REASON = "DeletionByDeviceTaintManager"
EVICTION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"
EVICTION_EVENT = "Normal DeviceTaintManagerEviction Pod/{name}: Marking for deletion"


def assert_evicted(
    pod: PodHandle, timeout: float = timeouts.TAINT_EVICTION, *, event: bool = False
) -> client.V1PodCondition:
    """The pod has the controller's DisruptionTarget condition (exact reason and message) within `timeout` and is
    then deleted; with `event`, the controller's event for it too. Returns the condition."""
    cond = pod.wait_condition("DisruptionTarget", timeout=timeout)
    assert (cond.reason, cond.message) == (EVICTION_REASON, EVICTION_MESSAGE), (
        f"{pod}: DisruptionTarget reason/message {(cond.reason, cond.message)}, expected "
        f"{(EVICTION_REASON, EVICTION_MESSAGE)}"
    )
    # The controller patches the condition, then deletes the pod: two writes (addConditionAndDeletePod), so the
    # deletion may come after the condition we saw.
    pod.wait_marked_for_deletion(timeout=timeouts.TAINT_EVICTION)
    if event:
        assert_eviction_event(pod)
    return cond


def assert_eviction_event(pod: PodHandle) -> None:
    """The controller recorded its eviction event for the pod (exact words)."""
    event = pod.wait_event("DeviceTaintManagerEviction")
    expected = EVICTION_EVENT.format(name=pod.name)
    assert event == expected, f"{pod}: DeviceTaintManagerEviction event {event!r}, expected {expected!r}"


def running_claim_pod(objects: Any, prefix: str, driver: str, **request: Any) -> tuple[ClaimPodHandle, Any]:
    """A kept pod with one claim from a template of `driver` (DraObjects.claim_pod), Running -> (its handle, its one
    allocated device)."""
    pod = objects.claim_pod(prefix, driver, request=request, keep=True)
    pod.wait_running()
    devices = pod.allocated_devices()
    assert len(devices) == 1, f"{pod} runs with allocated devices {devices}, expected one"
    return pod, devices[0]


def evicted(current: client.V1Pod) -> str | None:
    """A stays()/watch() probe: None while the pod is not being deleted, else its state."""
    if current.metadata.deletion_timestamp is not None:
        conditions = [(c.type, c.reason) for c in current.status.conditions or []]
        return f"pod deleted: {pods.summary(current)} conditions={conditions}"
    return None
