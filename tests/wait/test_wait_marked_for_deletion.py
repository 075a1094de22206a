"""wait.kube.for_pod_marked_for_deletion: the second of the device-taint controller's two writes (condition,
then delete) is awaited, not sampled once, and a pod never deleted fails with what was last seen."""

from __future__ import annotations

import datetime

import pytest
from kubernetes import client

from device_conformance.core.errors import ConformanceError
from device_conformance.wait.kube import for_pod_marked_for_deletion


class PodsAnswering:
    """What the waits read through: kube.core.read_namespaced_pod answers each of `answers` in turn."""

    def __init__(self, *answers: client.V1Pod | int) -> None:
        self.answers = list(answers)
        self.core = self

    def read_namespaced_pod(self, name: str, namespace: str) -> client.V1Pod:
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, int):
            raise client.ApiException(status=answer)
        return answer


def pod(deleted: bool) -> client.V1Pod:
    stamp = datetime.datetime(2026, 11, 24, tzinfo=datetime.UTC) if deleted else None
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name="p", deletion_timestamp=stamp), status=client.V1PodStatus(phase="Running")
    )


def test_the_deletion_that_follows_the_condition_is_awaited():
    for_pod_marked_for_deletion(PodsAnswering(pod(False), pod(False), pod(True)), "ns", "p", timeout=5)


def test_a_pod_already_gone_counts_as_deleted():
    for_pod_marked_for_deletion(PodsAnswering(404), "ns", "p", timeout=5)


def test_a_pod_never_deleted_fails_saying_what_was_seen():
    with pytest.raises(
        ConformanceError,
        match=r"(?s)pod ns/p to be marked for deletion.*last seen: no deletionTimestamp: phase=Running",
    ):
        for_pod_marked_for_deletion(PodsAnswering(pod(False)), "ns", "p", timeout=0.5)
