"""Waits of the driver handle (on the fakes' shared wait_until) and call summaries for their messages."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from device_conformance.errors import WaitTimeout
from device_conformance.fakes.waiting import NotYet
from device_conformance.fakes.waiting import wait_until as _wait_until

T = TypeVar("T")


def wait_until(
    what: str,
    probe: Callable[[], T],
    done: Callable[[T], bool],
    describe: Callable[[T], str],
    timeout: float,
    alive: Callable[[], bool],
) -> T:
    """Poll probe until done(value); on timeout (or when the driver died) raise WaitTimeout with what was seen."""

    def check() -> T:
        value = probe()
        if done(value):
            return value
        if not alive():
            # A dead driver cannot change anything any more: stop now instead of at the deadline.
            raise WaitTimeout(what, timeout, f"{describe(value)} (driver process is not running)")
        raise NotYet(describe(value))

    return _wait_until(what, check, timeout)


def summarize_calls(calls: list[dict[str, Any]]) -> str:
    """`NodePrepareResources=ok, GetInfo=UNAVAILABLE, ...` for timeout messages."""
    if not calls:
        return "none"
    parts = []
    for c in calls:
        outcome = "ok" if c["ok"] else (c["error"] or {}).get("code", "claim error")
        parts.append(f"{c['method'].rsplit('/', 1)[-1]}={outcome}")
    return ", ".join(parts)
