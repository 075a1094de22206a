"""taint_eviction.assert_evicted: the one eviction check of every taint suite. Each of its parts (the condition's
exact reason and message, the deletion that follows it, the controller's event) fails on its own."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from kubernetes import client

from device_conformance.core.errors import ConformanceError
from device_conformance.framework import taint_eviction


@dataclass
class EvictedPod:
    """What the check reads through a PodHandle: the condition, the deletion and the events of one pod."""

    name: str = "taint-1"
    reason: str = taint_eviction.EVICTION_REASON
    message: str = taint_eviction.EVICTION_MESSAGE
    deleted: bool = True
    event: str = "Normal DeviceTaintManagerEviction Pod/taint-1: Marking for deletion"
    calls: list[str] = field(default_factory=list)

    def wait_condition(self, type_: str, timeout: float) -> client.V1PodCondition:
        self.calls.append(f"condition {type_}")
        return client.V1PodCondition(type=type_, status="True", reason=self.reason, message=self.message)

    def wait_marked_for_deletion(self, timeout: float) -> None:
        self.calls.append("deletion")
        if not self.deleted:
            raise ConformanceError("timed out waiting for pod ns/taint-1 to be marked for deletion")

    def wait_event(self, text: str) -> str:
        self.calls.append(f"event {text}")
        return self.event

    def __str__(self) -> str:
        return f"pod ns/{self.name}"


def test_an_evicted_pod_passes_and_its_condition_is_returned():
    pod = EvictedPod()
    cond = taint_eviction.assert_evicted(pod, event=True)
    assert cond.reason == "DeletionByDeviceTaintManager"
    assert pod.calls == ["condition DisruptionTarget", "deletion", "event DeviceTaintManagerEviction"]


def test_the_event_is_read_only_when_asked():
    pod = EvictedPod(event="Normal Other Pod/taint-1: x")
    taint_eviction.assert_evicted(pod)
    assert pod.calls == ["condition DisruptionTarget", "deletion"]


@pytest.mark.parametrize(
    ("broken", "match"),
    [
        ({"reason": "TerminationByKubelet"}, r"DisruptionTarget reason/message \('TerminationByKubelet'"),
        ({"message": "Taint manager: deleting"}, r"'Taint manager: deleting'\), expected"),
        ({"event": "Normal DeviceTaintManagerEviction Pod/other: Marking for deletion"}, r"Pod/other"),
    ],
)
def test_a_wrong_condition_or_event_fails(broken, match):
    with pytest.raises(AssertionError, match=match):
        taint_eviction.assert_evicted(EvictedPod(**broken), event=True)


def test_a_pod_with_the_condition_but_never_deleted_fails():
    with pytest.raises(ConformanceError, match="to be marked for deletion"):
        taint_eviction.assert_evicted(EvictedPod(deleted=False))
