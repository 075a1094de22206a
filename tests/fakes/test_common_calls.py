"""The call log both fakes write: typed records, in flight until finished, continued by a restarted fake,
readable after a crash."""

import json
import os

import pytest

from device_conformance.fakes.common.calls import RPC, STREAM_SEND, Call, CallLog, read_calls, summarize


def lines(path):
    with open(path) as f:
        return f.read().splitlines()


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "calls.jsonl")


def test_a_call_is_in_flight_until_finished_and_the_later_line_wins(path):
    log = CallLog(path)
    call = log.start("Allocate", {"container_requests": []}, service="v1beta1.DevicePlugin", socket="dp.sock")

    [in_flight] = read_calls(path)
    assert (in_flight.seq, in_flight.method, in_flight.done, in_flight.ok, in_flight.pid) == (
        1,
        "Allocate",
        False,
        False,
        os.getpid(),
    )
    assert in_flight.summary() == "#1 Allocate (in flight)"

    log.finish(call, response={"container_responses": []})

    [finished] = read_calls(path)
    assert (finished.done, finished.ok, finished.error) == (True, True, None)
    assert (finished.service, finished.socket, finished.kind) == ("v1beta1.DevicePlugin", "dp.sock", RPC)
    assert finished.started_mono <= finished.ended_mono
    assert len(lines(path)) == 2  # one line at the start, one at the end


def test_outcomes_error_and_per_claim_error(path):
    log = CallLog(path)
    failed = log.start("GetInfo", {})
    log.finish(failed, error={"code": "UNAVAILABLE", "message": "not ready"})
    claims = {"claims": [{"uid": "uid-1"}, {"uid": "uid-2"}]}
    partial = log.start("NodePrepareResources", claims)
    log.finish(partial, response={"claims": {"uid-1": {"devices": []}, "uid-2": {"error": "broken"}}})

    first, second = read_calls(path)
    assert (first.ok, first.outcome()) == (False, "error UNAVAILABLE")
    assert (second.ok, second.outcome(), second.claim_uids) == (False, "claim error", ["uid-1", "uid-2"])
    assert summarize([first, second]) == "#1 GetInfo (error UNAVAILABLE), #2 NodePrepareResources (claim error)"
    assert summarize([]) == "no calls at all"


def test_an_event_is_one_finished_line(path):
    CallLog(path).event("ListAndWatch", {"devices": []}, kind=STREAM_SEND)

    assert len(lines(path)) == 1
    [sent] = read_calls(path)
    assert (sent.kind, sent.done, sent.ok, sent.response) == (STREAM_SEND, True, True, {"devices": []})


def test_a_new_writer_on_the_same_file_continues_seq(path):
    first = CallLog(path)
    first.start("NodePrepareResources", {})  # still in flight when its process "died"
    first.close()

    second = CallLog(path)
    second.finish(second.start("NodePrepareResources", {}), response={})

    assert [(c.seq, c.done) for c in read_calls(path)] == [(1, False), (2, True)]


def test_a_torn_last_line_and_unknown_fields_are_tolerated(path):
    log = CallLog(path)
    log.finish(log.start("GetInfo", {}), response={})
    record = json.loads(lines(path)[-1])
    with open(path, "a") as f:
        f.write(json.dumps({**record, "seq": 2, "added_later": True}) + "\n")
        f.write('{"seq": 3, "meth')  # SIGKILL in the middle of a write

    assert [c.seq for c in read_calls(path)] == [1, 2]
    assert read_calls(os.path.dirname(path) + "/missing.jsonl") == []
    assert Call.from_dict({**record, "added_later": True}) == read_calls(path)[0]


def test_an_empty_path_logs_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = CallLog("")
    log.finish(log.start("GetInfo", {}), response={})
    log.close()

    assert os.listdir(tmp_path) == []


def test_claim_record_lists_claims_and_outcome_of_each_call(path):
    from device_conformance.fakes.common.calls import claim_record

    log = CallLog(path)
    ok = log.start("NodePrepareResources", {"claims": [{"uid": "u1"}, {"uid": "u2"}]})
    log.finish(ok, response={"claims": {"u1": {}, "u2": {}}})
    failed = log.start("NodePrepareResources", {"claims": [{"uid": "u3"}]})
    log.finish(failed, error={"code": "UNAVAILABLE", "message": "down"})
    log.start("NodeUnprepareResources", {"claims": [{"uid": "u1"}]})

    assert claim_record(read_calls(path)) == [
        (["u1", "u2"], "ok"),
        (["u3"], "error UNAVAILABLE"),
        (["u1"], "in flight"),
    ]


def test_timing_gives_the_utc_start_to_the_millisecond_and_the_duration():
    # 2026-11-23 18:23:39.202 UTC, the kubelet log's stamp for the same moment.
    call = Call(seq=4, method="NodeUnprepareResources", started_wall=1795458219.2025, started_mono=100.0)
    assert call.timing() == "at 18:23:39.202 UTC, in flight"
    call.ended_mono = 145.0004
    assert call.timing() == "at 18:23:39.202 UTC, 45.000 s"
