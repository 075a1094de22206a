"""Polling for the handle: tenacity underneath, a WaitTimeout naming what was awaited and what was seen."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

from device_conformance.errors import WaitTimeout

T = TypeVar("T")
POLL = 0.05


class _NotYet(Exception):
    pass


def wait_until(
    what: str,
    probe: Callable[[], T],
    done: Callable[[T], bool],
    describe: Callable[[T], str],
    timeout: float,
    alive: Callable[[], bool],
) -> T:
    """Poll probe until done(value); on timeout (or when the driver died) raise WaitTimeout with what was seen."""
    seen: list[T] = []

    def attempt() -> None:
        seen[:] = [probe()]
        # A dead driver cannot change anything any more: stop now instead of at the deadline.
        if not done(seen[0]) and alive():
            raise _NotYet

    try:
        for tries in Retrying(
            stop=stop_after_delay(timeout),
            wait=wait_fixed(POLL),
            retry=retry_if_exception_type(_NotYet),
            reraise=True,
        ):
            with tries:
                attempt()
    except _NotYet:
        pass
    if seen and done(seen[0]):
        return seen[0]
    last = describe(seen[0]) if seen else "nothing"
    if not alive():
        last += " (driver process is not running)"
    raise WaitTimeout(what, timeout, last)


def summarize_calls(calls: list[dict[str, Any]]) -> str:
    """`NodePrepareResources=ok, GetInfo=UNAVAILABLE, ...` for timeout messages."""
    if not calls:
        return "none"
    parts = []
    for c in calls:
        outcome = "ok" if c["ok"] else (c["error"] or {}).get("code", "claim error")
        parts.append(f"{c['method'].rsplit('/', 1)[-1]}={outcome}")
    return ", ".join(parts)
