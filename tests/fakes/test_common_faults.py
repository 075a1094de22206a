"""The fault model both fakes share, in process: which call a fault hits, what it does, how long it lasts.
(The crash action kills its process; it is tested on real fake processes in the device plugin and DRA
driver tests.)"""

import threading
import time

import grpc
import pytest

from device_conformance.fakes.common.control import ControlClient, ControlError, ControlServer, answer
from device_conformance.fakes.common.faults import BLOCK, CLAIM_ERROR, DELAY, ERROR, Fault, Faults, Status

CLAIM_METHODS = ("NodePrepareResources", "NodeUnprepareResources")


def always():
    return True


@pytest.fixture
def faults():
    return Faults([*CLAIM_METHODS, "GetInfo"], api="DRA driver", claim_methods=CLAIM_METHODS)


def test_no_fault_admits_the_call(faults):
    verdict = faults.admit("NodePrepareResources", ["uid-1"], is_active=always)

    assert (verdict.cancelled, verdict.error, verdict.claim_errors) == (False, None, {})


def test_an_error_fault_hits_only_the_next_times_calls(faults):
    faults.add(Fault("GetInfo", ERROR, "unavailable", "not ready", times=2))

    verdicts = [faults.admit("GetInfo", is_active=always) for _ in range(3)]

    assert [v.error for v in verdicts] == [Status("UNAVAILABLE", "not ready")] * 2 + [None]
    assert faults.describe()["faults"] == []


def test_the_latest_fault_goes_first_and_the_earlier_one_after_it(faults):
    faults.add(Fault("GetInfo", ERROR, "INTERNAL", "old"))
    faults.add(Fault("GetInfo", ERROR, "UNAVAILABLE", "new", times=1))

    first, second = (faults.admit("GetInfo", is_active=always).error for _ in range(2))

    assert (first, second) == (Status("UNAVAILABLE", "new"), Status("INTERNAL", "old"))


def test_a_claim_selector_limits_a_fault_to_calls_naming_that_claim(faults):
    faults.add(Fault("NodePrepareResources", ERROR, claim_uid="uid-2", message="not this one"))

    assert faults.admit("NodePrepareResources", ["uid-1"], is_active=always).error is None
    assert faults.admit("NodePrepareResources", ["uid-1", "uid-2"], is_active=always).error == Status(
        "UNKNOWN", "not this one"
    )


def test_claim_errors_name_each_matching_claim_and_a_whole_call_error_goes_first(faults):
    faults.add(Fault("NodePrepareResources", CLAIM_ERROR, message="all broken", times=1))
    faults.add(Fault("NodePrepareResources", CLAIM_ERROR, message="uid-2 broken", claim_uid="uid-2"))

    verdict = faults.admit("NodePrepareResources", ["uid-1", "uid-2"], is_active=always)

    assert verdict.claim_errors == {"uid-1": "all broken", "uid-2": "uid-2 broken"}
    assert faults.admit("NodePrepareResources", ["uid-1"], is_active=always).claim_errors == {}  # used up
    faults.add(Fault("NodePrepareResources", ERROR, message="whole call"))
    verdict = faults.admit("NodePrepareResources", ["uid-2"], is_active=always)
    assert (verdict.error, verdict.claim_errors) == (Status("UNKNOWN", "whole call"), {})
    faults.clear("NodePrepareResources")
    assert faults.admit("NodePrepareResources", ["uid-2"], is_active=always).claim_errors == {}


def test_a_block_holds_matching_calls_until_unblocked(faults):
    faults.add(Fault("NodePrepareResources", BLOCK, claim_uid="uid-1"))
    verdicts = []
    held = threading.Thread(
        target=lambda: verdicts.append(faults.admit("NodePrepareResources", ["uid-1"], is_active=always))
    )
    held.start()
    while not faults.blocked_calls():
        time.sleep(0.01)

    assert faults.admit("NodePrepareResources", ["uid-2"], is_active=always).cancelled is False  # not held
    [blocked] = faults.blocked_calls()
    assert (blocked["method"], blocked["claims"]) == ("NodePrepareResources", ["uid-1"])
    assert held.is_alive()
    faults.unblock("NodePrepareResources")
    held.join(timeout=5)

    assert [v.cancelled for v in verdicts] == [False]
    assert faults.blocked_calls() == []


def test_a_held_call_ends_when_its_caller_goes_away(faults):
    faults.add(Fault("NodeUnprepareResources", BLOCK))
    deadline = time.monotonic() + 0.2

    verdict = faults.admit("NodeUnprepareResources", ["uid-1"], is_active=lambda: time.monotonic() < deadline)

    assert verdict.cancelled
    assert faults.describe()["faults"][0]["action"] == BLOCK  # the block stays for the next call


def test_a_delay_holds_the_call_then_answers(faults):
    faults.add(Fault("GetInfo", DELAY, seconds=0.3, times=1))

    started = time.monotonic()
    verdict = faults.admit("GetInfo", is_active=always)

    assert time.monotonic() - started >= 0.3
    assert (verdict.cancelled, verdict.error) == (False, None)
    started = time.monotonic()
    faults.admit("GetInfo", is_active=always)
    assert time.monotonic() - started < 0.3


@pytest.mark.parametrize(
    "fault,problem",
    [
        (Fault("Alocate"), "unknown DRA driver method 'Alocate'"),
        (Fault("GetInfo", "explode"), "unknown fault action 'explode'"),
        (Fault("GetInfo", CLAIM_ERROR), "GetInfo has no per-claim errors"),
        (Fault("GetInfo", BLOCK, times=1), "a block holds every matching call until unblocked"),
        (Fault("GetInfo", ERROR, "BROKEN"), "unknown gRPC status code 'BROKEN'"),
    ],
)
def test_faults_that_make_no_sense_are_refused(faults, fault, problem):
    with pytest.raises(ValueError, match=problem):
        faults.add(fault)
    assert faults.describe() == {"faults": [], "blocked_calls": []}


def test_status_codes_by_any_spelling(faults):
    faults.add(Fault("GetInfo", ERROR, "resource_exhausted"))
    faults.add(Fault("GetInfo", ERROR, grpc.StatusCode.INTERNAL.name))

    assert [f["code"] for f in faults.describe()["faults"]] == ["RESOURCE_EXHAUSTED", "INTERNAL"]


def test_control_channel_round_trip_and_refusals(tmp_path, faults):
    server = ControlServer(str(tmp_path / "ctl"), {"ping": lambda: {"pid": 1}, **faults.ops()})
    server.start()
    client = ControlClient(str(tmp_path / "ctl"), timeout=5)
    try:
        assert client.call("ping") == {"pid": 1}
        client.call("add_fault", {"fault": {"method": "GetInfo", "code": "INTERNAL", "message": "x"}})
        assert faults.admit("GetInfo", is_active=always).error == Status("INTERNAL", "x")
        with pytest.raises(ControlError, match=r"add_fault: ValueError: unknown DRA driver method 'Nope'"):
            client.call("add_fault", {"fault": {"method": "Nope"}})
        with pytest.raises(ControlError, match="unknown op 'nope'"):
            client.call("nope")
    finally:
        server.stop()
    with pytest.raises(ControlError, match="failed on 'ping'"):
        client.call("ping")
    assert answer({}, b"not json")["ok"] is False
