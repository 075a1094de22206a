"""wait/core.py: until and stays, the one poll engine."""

import pytest

from device_conformance.errors import WaitTimeout
from device_conformance.wait.core import Abort, Pending, stays, until


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
