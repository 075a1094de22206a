"""What a user sees when the device-taint eviction controller evicts a pod: the pod's DisruptionTarget condition,
its deletion and the controller's event. One check for every taint suite, so they cannot drift apart."""

from __future__ import annotations

from kubernetes import client

from device_conformance import timeouts
from device_conformance.handles import PodHandle

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
