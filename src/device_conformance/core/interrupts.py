"""Work that must not stop half-way when Ctrl-C (or CI's SIGTERM) arrives: a cluster's teardown.

A KeyboardInterrupt raised in the middle of a teardown leaves whatever came after it (the control plane,
the cgroups, the bridge, the run directory) behind until some later run cleans it up; bench/interrupt.py
showed it. Inside `deferred_interrupts()` the signal is noted, the block runs to its end, and then the
KeyboardInterrupt is raised, so the run still stops.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

DEFERRED = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def deferred_interrupts(log: Callable[[str], None] = lambda _: None) -> Iterator[None]:
    """SIGINT/SIGTERM during the block are held and raised as KeyboardInterrupt after it (main thread only:
    Python delivers signals there; elsewhere the block runs unchanged)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        log(f"{signal.Signals(signum).name} received: finishing the teardown first, so nothing is left behind")

    previous = {sig: signal.signal(sig, hold) for sig in DEFERRED}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
    if received:
        raise KeyboardInterrupt
