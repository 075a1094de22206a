"""certify/dra_health.py: what one DRAResourceHealth stream gave, as the kubelet would open it (again 5 s after an
end, never again after UNIMPLEMENTED), on streams scripted without a driver."""

from __future__ import annotations

import grpc
from certify_subjects import VirtualClock

from device_conformance.certify import dra_health
from device_conformance.protos.drahealth.v1 import api_pb2 as pb


class Failed(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


class Stream:
    """One call's answer: raises `first` if it is an error, else yields it; records cancel()."""

    def __init__(self, first: object) -> None:
        self.first, self.cancelled = first, False

    def __iter__(self) -> Stream:
        return self

    def __next__(self) -> object:
        if isinstance(self.first, BaseException):
            raise self.first
        if self.first is None:
            raise StopIteration
        return self.first

    def cancel(self) -> None:
        self.cancelled = True


REPORT = pb.NodeWatchResourcesResponse(
    devices=[pb.DeviceHealth(device=pb.DeviceIdentifier(pool_name="node-1", device_name="dev-0"), health=pb.HEALTHY)]
)


def watch(answers, window=30.0):
    streams = [Stream(a) for a in answers]
    opened = iter(streams)
    clock = VirtualClock()
    got = dra_health.watch_first_report(
        lambda: next(opened), "v1", now=clock.now, sleep=clock.sleep, window=window, pause=5.0
    )
    return got, streams


def test_an_error_is_called_again_5_s_later_as_the_kubelet_does_until_a_report_comes():
    got, streams = watch([Failed(grpc.StatusCode.INTERNAL, "monitor starting"), REPORT])
    assert (got.outcome, got.calls, got.errors, got.seconds) == (
        dra_health.REPORT,
        2,
        ["INTERNAL: monitor starting"],
        5.0,
    )
    assert got.report == REPORT
    assert [s.cancelled for s in streams] == [True, True]


def test_unimplemented_is_a_decline_and_never_called_again():
    got, _ = watch([Failed(grpc.StatusCode.UNIMPLEMENTED, "not supported"), REPORT])
    assert (got.outcome, got.calls, got.errors) == (dra_health.DECLINED, 1, ["UNIMPLEMENTED: not supported"])


def test_a_stream_ended_without_a_report_is_an_error_the_kubelet_calls_again_for_until_the_window_ends():
    got, _ = watch([None] * 7)
    assert (got.outcome, got.calls, got.seconds) == (dra_health.ERROR, 6, 25.0)
    assert got.errors == ["OK: the stream ended without a report"] * 6


def test_names_missing_from_a_report_are_listed_by_position():
    report = pb.NodeWatchResourcesResponse(
        devices=[
            pb.DeviceHealth(device=pb.DeviceIdentifier(pool_name="node-1", device_name="dev-0")),
            pb.DeviceHealth(device=pb.DeviceIdentifier(pool_name="", device_name="dev-1")),
            pb.DeviceHealth(),
        ]
    )
    assert dra_health.unnamed(report) == ["devices[1] (pool '', device 'dev-1')", "devices[2] (pool '', device '')"]
