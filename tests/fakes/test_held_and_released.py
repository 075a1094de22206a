"""calls.held_and_released: the calls a test held and let go at once (the kubelet may make more than one while a
call is held: its reconcile loop, its retry after its own deadline), judged from the fake's clock alone."""

import re

import pytest

from device_conformance.fakes.common.calls import Call, held_and_released

UNPREPARE = "NodeUnprepareResources"


def call(seq: int, start: float, end: float | None, outcome: str = "ok") -> Call:
    error = None if outcome == "ok" else {"code": outcome, "message": "the caller went away"}
    return Call(
        seq=seq,
        method=UNPREPARE,
        request={"claims": [{"uid": "u1"}]},
        done=end is not None,
        ok=outcome == "ok" and end is not None,
        error=error,
        started_mono=start,
        ended_mono=end,
    )


def test_one_held_call_answered_at_the_release():
    assert held_and_released([call(1, 10.0, 30.0)], caller_deadline=44) is None


def test_a_reconcile_call_made_during_the_hold_is_answered_at_the_same_release():
    assert held_and_released([call(1, 10.0, 70.0), call(2, 40.0, 70.01)], caller_deadline=44) is None


def test_a_call_cancelled_by_the_callers_deadline_then_retried_during_the_hold():
    calls = [call(1, 10.0, 55.0, "CANCELLED"), call(2, 60.0, 80.0)]
    assert held_and_released(calls, caller_deadline=44) is None


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ([call(1, 10.0, 30.0), call(2, 31.0, 31.5)], r"#2 started 1.000 s after the release"),
        ([call(1, 10.0, 20.0, "CANCELLED"), call(2, 21.0, 40.0)], r"#1 ended error CANCELLED after 10.000 s held"),
        ([call(1, 10.0, 30.0, "INTERNAL"), call(2, 11.0, 30.0)], r"#1 ended error INTERNAL after 20.000 s held"),
        ([call(1, 10.0, None)], r"none was answered ok: #1 NodeUnprepareResources \(in flight\)"),
    ],
)
def test_a_call_after_the_release_or_ended_otherwise_is_named(calls, problem):
    found = held_and_released(calls, caller_deadline=44)
    assert found is not None
    assert re.search(problem, found), found
