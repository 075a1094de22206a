"""The condition wait shared by the fakes' handles (fakes may not import device_conformance.wait).

The probe raises NotYet(what it saw) until the condition holds; any other exception ends the wait at
once (a dead plugin process should fail fast, not after the timeout).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from device_conformance.errors import WaitTimeout

T = TypeVar("T")


class NotYet(Exception):
    def __init__(self, last_seen: str) -> None:
        super().__init__(last_seen)
        self.last_seen = last_seen


def wait_until(what: str, probe: Callable[[], T], timeout: float, interval: float = 0.05) -> T:
    """Return probe()'s first value; raise WaitTimeout naming `what` and the last NotYet seen."""
    history: list[str] = []
    try:
        for attempt in Retrying(
            stop=stop_after_delay(timeout),
            wait=wait_fixed(interval),
            retry=retry_if_exception_type(NotYet),
            reraise=True,
        ):
            with attempt:
                try:
                    return probe()
                except NotYet as err:
                    if not history or history[-1] != err.last_seen:
                        history.append(err.last_seen)
                    raise
    except NotYet as err:
        raise WaitTimeout(what, timeout, err.last_seen, history[:-1] or None) from None
    raise AssertionError("unreachable")  # pragma: no cover
