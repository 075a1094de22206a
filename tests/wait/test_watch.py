"""wait.core.watch: a background `stays` whose verdict is collected later."""

import threading
import time

import pytest

from device_conformance.wait.core import watch


def test_a_window_that_holds_passes_and_takes_its_full_duration():
    started = time.monotonic()
    window = watch(lambda: None, what="nothing to happen", duration=0.6, interval=0.05)
    window.holds()
    assert time.monotonic() - started >= 0.6


def test_the_first_break_fails_with_when_and_what_broke_it():
    broken = threading.Event()
    window = watch(
        lambda: "pod evicted" if broken.is_set() else None, what="the pod to stay", duration=5, interval=0.02
    )
    time.sleep(0.1)
    broken.set()
    with pytest.raises(AssertionError, match=r"expected the pod to stay for 5s, but after \d+\.\ds: pod evicted"):
        window.holds()
    assert window.elapsed < 5, "a broken window ends at once, not after its duration"


def test_work_done_while_the_window_runs_overlaps_it():
    window = watch(lambda: None, what="nothing", duration=0.5, interval=0.05)
    time.sleep(0.4)  # stands for the tests that run meanwhile
    started = time.monotonic()
    window.holds()
    assert time.monotonic() - started < 0.3


def test_a_probe_that_never_reads_its_state_is_not_a_pass():
    def failing():
        raise ConnectionError("API down")

    window = watch(failing, what="the claim to stay prepared", duration=0.2, interval=0.05)
    with pytest.raises(AssertionError, match="never read the state it guards: ConnectionError: API down"):
        window.holds()


def test_cancel_stops_sampling():
    calls = []
    window = watch(lambda: calls.append(1), what="x", duration=30, interval=0.01)
    time.sleep(0.05)
    window.cancel()
    seen = len(calls)
    time.sleep(0.05)
    assert len(calls) == seen
