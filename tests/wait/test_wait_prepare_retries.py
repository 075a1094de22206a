"""A claim pod's start waits as long as the kubelet keeps retrying its prepare (wait/dra.py with_prepare_retries)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from device_conformance.wait import dra as wait_dra
from device_conformance.wait import progress
from device_conformance.wait.core import Pending
from device_conformance.wait.progress import Stalled


class Events:
    """The pod's FailedPrepareDynamicResources events as the API lists them at each moment of a fake clock."""

    def __init__(self, clock: list[float], failures_at: list[float]) -> None:
        self.clock, self.failures_at = clock, failures_at
        self.selectors: list[str] = []

    def list_namespaced_event(self, namespace: str, field_selector: str) -> SimpleNamespace:
        self.selectors.append(field_selector)
        seen = [t for t in self.failures_at if t <= self.clock[0]]
        # One aggregated event whose count grows, as the kubelet's recorder sends a repeated event.
        return SimpleNamespace(items=[SimpleNamespace(count=len(seen))] if seen else [])


@pytest.fixture
def clock(monkeypatch) -> list[float]:
    now = [0.0]
    real = progress.until_progressing

    def on_the_fake_clock(*args, **kwargs):
        def sleep(seconds: float) -> None:
            now[0] += seconds

        return real(*args, clock=lambda: now[0], sleep=sleep, **kwargs)

    monkeypatch.setattr(wait_dra, "until_progressing", on_the_fake_clock)
    return now


def running_at(clock: list[float], at: float):
    return lambda: "running" if clock[0] >= at else Pending("phase=Pending main: waiting ContainerCreating")


def test_each_failed_prepare_gives_the_start_another_stall(clock):
    events = Events(clock, failures_at=[1.0, 80.0, 170.0])
    kube = SimpleNamespace(core=events)
    got = wait_dra.with_prepare_retries(kube, "ns", "pod", running_at(clock, 250.0), what="pod to run", stall=120)
    assert got == "running" and 250.0 <= clock[0] < 252.0
    assert events.selectors[0] == "involvedObject.name=pod,reason=FailedPrepareDynamicResources"


def test_no_new_attempt_within_the_stall_is_a_hang_naming_what_was_seen(clock):
    kube = SimpleNamespace(core=Events(clock, failures_at=[1.0]))
    with pytest.raises(Stalled) as stalled:
        wait_dra.with_prepare_retries(kube, "ns", "pod", running_at(clock, 1000.0), what="pod to run", stall=120)
    assert 121.0 <= clock[0] < 123.0  # 120 s after the last failed prepare, not after the start
    assert "pod to run" in str(stalled.value) and "failed prepares: 1" in str(stalled.value)
