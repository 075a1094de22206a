"""The one poll engine. A wait names what it waits for; when it times out it says what it last saw.

`until(probe, ...)` calls probe() until it returns a non-None value (returned), or raises WaitTimeout
with the last value seen (probe may return Pending(seen) to report progress). Exceptions from the probe
count as "not yet" and are reported as the last thing seen.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from device_conformance.errors import WaitTimeout

T = TypeVar("T")


@dataclass(frozen=True)
class Pending:
    """What a probe saw when the condition does not hold yet (shown if the wait times out)."""

    seen: str


class Abort(Exception):
    """Raised by a probe when waiting longer is pointless (e.g. the process died); ends the wait at once."""


class _NotYet(Exception):
    pass


def until(
    probe: Callable[[], T | Pending | None],
    *,
    what: str,
    timeout: float,
    interval: float = 0.2,
    max_interval: float = 1.0,
) -> T:
    """Poll probe until it yields a value; interval grows from `interval` up to `max_interval`."""
    history: list[str] = []
    started = time.monotonic()
    last = ["nothing yet"]

    def attempt() -> T:
        try:
            result = probe()
        except Abort:
            raise
        except Exception as exc:  # a probe failing (API hiccup, socket absent) is "not yet"
            result = Pending(f"{type(exc).__name__}: {exc}")
        if result is None or isinstance(result, Pending):
            seen = result.seen if isinstance(result, Pending) else "condition false"
            if seen != last[0]:
                history.append(f"{time.monotonic() - started:.1f}s {seen}")
                last[0] = seen
            raise _NotYet
        return result

    retrying = Retrying(
        stop=stop_after_delay(timeout),
        wait=wait_exponential(multiplier=interval, min=interval, max=max_interval),
        retry=retry_if_exception_type(_NotYet),
    )
    try:
        return retrying(attempt)
    except RetryError:
        raise WaitTimeout(what, timeout, last[0], history) from None


def stays(probe: Callable[[], str | None], *, what: str, duration: float, interval: float = 0.5) -> None:
    """Assert a condition holds for `duration`: probe returns None while fine, else what broke it."""
    deadline = time.monotonic() + duration
    while True:
        broken = probe()
        if broken is not None:
            raise AssertionError(f"expected {what} for {duration:.0f}s, but: {broken}")
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)
