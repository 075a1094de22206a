"""The one poll engine. A wait names what it waits for; when it times out it says what it last saw.

`until(probe, ...)` calls probe() until it returns a non-None value (returned), or raises WaitTimeout
with the last value seen (probe may return Pending(seen) to report progress). Exceptions from the probe
count as "not yet" and are reported as the last thing seen.

A check, the other convention, returns None when its condition holds and else a string saying what it saw;
the same check serves `until_holds` (wait for it), `stays` and `Watch` (it must keep holding).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from device_conformance.core.errors import WaitTimeout

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
    # Imported here: fakes import this module for Pending and Abort, and a fake's start should not pay for it.
    from tenacity import RetryError, Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

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


def holding(check: Callable[[], str | None]) -> Callable[[], bool | Pending]:
    """A check (None when it holds, else what it saw) as a probe for `until` or `until_progressing`."""

    def probe() -> bool | Pending:
        seen = check()
        return True if seen is None else Pending(seen)

    return probe


def until_holds(
    check: Callable[[], str | None], *, what: str, timeout: float, interval: float = 0.2, max_interval: float = 1.0
) -> None:
    """Poll a check until it returns None (its condition holds); on timeout, say what it last saw."""
    until(holding(check), what=what, timeout=timeout, interval=interval, max_interval=max_interval)


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


class Watch:
    """`stays` in the background: a window that runs while the test (or the tests after it) go on.

    Upstream's "nothing happens" windows are long (60 s for a pod not to be evicted, 120 s for an orphan
    claim to be unprepared); serialized they would multiply the suite's wall time. Start the watch as soon
    as the state it guards exists, typically in a module-scoped fixture, and collect its verdict with
    `holds()` where the test needs it: by then most of the window has passed while other tests ran. The
    probe returns None while all is well, else what broke it; the first break ends the watch.
    """

    def __init__(self, probe: Callable[[], str | None], *, what: str, duration: float, interval: float = 0.5) -> None:
        self.what = what
        self.duration = duration
        self._probe = probe
        self._interval = interval
        self._started = time.monotonic()
        self._broken: str | None = None
        self._samples = 0
        self._last_error = "no sample taken"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch: {what}", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        deadline = self._started + self.duration
        while not self._stop.is_set():
            try:
                broken = self._probe()
            except Exception as exc:  # an API hiccup is no verdict; a probe that always fails shows in `samples`
                broken = None
                self._last_error = f"{type(exc).__name__}: {exc}"
            else:
                self._samples += 1
            if broken is not None:
                self._broken = f"after {time.monotonic() - self._started:.1f}s: {broken}"
                return
            if time.monotonic() >= deadline:
                return
            self._stop.wait(self._interval)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def holds(self) -> None:
        """Block until the window is over (or broke) and fail with what broke it, if anything did."""
        self._thread.join(self.duration + 60)
        if self._broken is not None:
            raise AssertionError(f"expected {self.what} for {self.duration:.0f}s, but {self._broken}")
        if self._thread.is_alive():
            raise AssertionError(f"the watch for {self.what} did not finish within its window + 60 s")
        if self._samples == 0:
            raise AssertionError(f"the watch for {self.what} never read the state it guards: {self._last_error}")

    def cancel(self) -> None:
        """Stop sampling (teardown of a watch nobody collected)."""
        self._stop.set()
        self._thread.join(self._interval + 5)


def watch(probe: Callable[[], str | None], *, what: str, duration: float, interval: float = 0.5) -> Watch:
    """Start a background `stays` (see Watch); collect it with `.holds()`."""
    return Watch(probe, what=what, duration=duration, interval=interval)
