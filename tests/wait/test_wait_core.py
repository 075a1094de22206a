"""wait/core.py: until and stays, the one poll engine."""

import pytest

from device_conformance.core.errors import WaitTimeout
from device_conformance.wait.core import Abort, Pending, stays, until, until_holds


def test_until_returns_the_first_value():
    values = iter([None, Pending("warming up"), 42])
    assert until(lambda: next(values), what="the answer", timeout=5, interval=0.01) == 42


def test_until_timeout_says_what_was_awaited_and_last_seen():
    with pytest.raises(WaitTimeout) as excinfo:
        until(lambda: Pending("allocatable=0"), what="allocatable to reach 2", timeout=0.3, interval=0.05)
    message = str(excinfo.value)
    assert "allocatable to reach 2" in message and "last seen: allocatable=0" in message


def test_until_stops_at_once_on_abort():
    def probe():
        raise Abort("the process died")

    with pytest.raises(Abort):
        until(probe, what="never", timeout=30)


def test_stays_reports_what_broke_the_condition():
    with pytest.raises(AssertionError, match="capacity dropped"):
        stays(lambda: "capacity dropped", what="capacity 2", duration=1, interval=0.01)
    stays(lambda: None, what="capacity 2", duration=0.05, interval=0.01)


def test_one_check_serves_until_holds_and_stays():
    seen = iter(["1 pod left", "1 pod left", None, None])

    def gone() -> str | None:
        return next(seen)

    until_holds(gone, what="the pods to go", timeout=5, interval=0.01)
    stays(gone, what="no pod", duration=0, interval=0.01)


def test_until_holds_times_out_with_what_the_check_last_saw():
    with pytest.raises(WaitTimeout) as raised:
        until_holds(lambda: "2 pods left", what="the pods to go", timeout=0.05, interval=0.01)
    assert "the pods to go" in str(raised.value)
    assert "2 pods left" in str(raised.value)
