"""Waiting on a process we started, with the budget counted in the process's progress, not in wall time.

A fake that answers 0.3 s after its start on an idle machine took more than 20 s on a 2-core machine at
load 8.7 where every Python process compiles its imports from source: a fixed wall-clock budget turned a
slow machine into a failed test. So a start (or readiness) wait here goes on while the process shows a
sign of life since the last look:

- its CPU time grew (utime+stime+cutime+cstime of it and its descendants, /proc/<pid>/stat),
- it is runnable or in disk sleep (state R or D: it wants the CPU or the disk, the machine is slow),
- its log grew, or whatever else the caller samples changed.

It ends with the probe's value once the awaited event happened; at once when the probe raises Abort
(the process died: the caller quotes its log); with Stalled when nothing progressed for `budget.stall`
seconds (asleep and silent: waiting for something that will not come, or SIGSTOPped); and with a
WaitTimeout at `budget.ceiling` seconds, which only a process busy forever (a spin) reaches.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from device_conformance.core.errors import CommandError, ConformanceError, WaitTimeout
from device_conformance.wait.core import Abort, Pending

T = TypeVar("T")

__all__ = ["Budget", "Reading", "Stalled", "nothing", "of_process", "of_processes", "of_values", "until_progressing"]


@dataclass(frozen=True)
class Budget:
    """stall: seconds without any progress before a live process counts as hung; ceiling: wall-clock seconds
    only a process that never stops working reaches (a limit on a runaway, not on a slow machine)."""

    stall: float
    ceiling: float


@dataclass(frozen=True)
class Reading:
    """One look at the awaited process: `token` changes when it progressed, `busy` means it is working right
    now (runnable or in disk sleep), `text` says what was seen, for error messages."""

    token: Hashable
    busy: bool
    text: str


Progress = Callable[[], Reading]


class Stalled(WaitTimeout):
    """A live process made no progress for the budget's stall window while we waited for it."""

    def __init__(
        self, what: str, elapsed: float, stall: float, last_seen: str, process: str, history: list[str]
    ) -> None:
        lines = [
            f"gave up after {elapsed:.0f}s waiting for {what}: no progress for {stall:.0f}s "
            "(alive, but used no CPU and wrote nothing)",
            f"  last seen: {last_seen}",
            f"  process: {process}",
        ]
        if history:
            lines.append("  transitions: " + " -> ".join(history[-12:]))
        ConformanceError.__init__(self, "\n".join(lines))
        self.what, self.timeout, self.last_seen = what, elapsed, last_seen


# -- progress samples -------------------------------------------------------------------------------

_BUSY_STATES = frozenset("RD")


def _stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/<pid>/stat from the state on (fields 3.. of proc(5)); None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return kids
    for task in tasks:
        try:
            kids.extend(int(p) for p in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return kids


def _tree(pid: int, limit: int = 256) -> list[int]:
    """pid and its descendants (a wrapper such as nsenter or a shell does its work in a child)."""
    seen, todo = [], [pid]
    while todo and len(seen) < limit:
        current = todo.pop()
        if current not in seen:
            seen.append(current)
            todo.extend(_children(current))
    return seen


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return -1


def of_process(pid: int | Callable[[], int | None], logs: Sequence[Path] = ()) -> Progress:
    """Progress of a process tree (pid, or a callable giving the current pid, None while there is none) and
    of the logs it writes."""

    def read() -> Reading:
        current = pid() if callable(pid) else pid
        sizes = tuple(_size(log) for log in logs)
        log_text = f", log {'+'.join(str(s) for s in sizes)} bytes" if logs else ""
        if current is None:
            return Reading(("none", sizes), False, f"no process{log_text}")
        ticks, states = 0, []
        for member in _tree(current):
            fields = _stat_fields(member)
            if fields is None:
                continue
            states.append(fields[0])
            ticks += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime (proc(5) fields 14-17)
        if not states:
            return Reading(("gone", current, sizes), False, f"pid {current} gone{log_text}")
        cpu = ticks / _CLOCK_TICKS
        text = f"pid {current}, cpu {cpu:.2f}s, state {''.join(states)}{log_text}"
        return Reading((current, ticks, sizes), any(s in _BUSY_STATES for s in states), text)

    return read


def of_processes(pids: Callable[[], Iterable[int]], logs: Sequence[Path] = ()) -> Progress:
    """Progress of several process trees at once (e.g. `ctr images import` and the containerd that does the
    work) and of their logs."""

    def read() -> Reading:
        readings = [of_process(pid)() for pid in pids()]
        sizes = tuple(_size(log) for log in logs)
        text = "; ".join(r.text for r in readings) or "no process"
        if logs:
            text += f", log {'+'.join(str(s) for s in sizes)} bytes"
        return Reading((tuple(r.token for r in readings), sizes), any(r.busy for r in readings), text)

    return read


def of_values(sample: Callable[[], Hashable], describe: str = "") -> Progress:
    """Progress as any change of a sampled value (a pod's status, a log mark); never busy by itself. A sample
    that cannot be taken is a reading too, as a failing probe is "not yet" (a kind node booting after `docker
    restart` has no systemd to ask for the kubelet's pid yet)."""

    def read() -> Reading:
        try:
            value = sample()
        except Exception as exc:
            unreadable = f"{type(exc).__name__}: {exc}"
            return Reading(("unreadable", unreadable), False, f"{describe}unreadable ({unreadable})")
        return Reading(value, False, f"{describe}{value!r}")

    return read


def _clock_ticks() -> int:
    try:
        return os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        return 100


_CLOCK_TICKS = _clock_ticks()


# -- the wait ---------------------------------------------------------------------------------------


def nothing() -> Reading:
    """No progress signal of its own: only changes in what the probe sees count."""
    return Reading(None, False, "no process watched")


def until_progressing(
    probe: Callable[[], T | Pending | None],
    *,
    what: str,
    progress: Progress,
    budget: Budget,
    interval: float = 0.05,
    max_interval: float = 0.5,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Call probe until it yields a value (like wait.core.until), for as long as `progress` shows the awaited
    process alive and working; Abort from the probe ends the wait at once. A probe that raises anything else
    has "not yet" seen the event (the socket is not there yet). A change in what the probe sees (its Pending
    text) counts as progress too."""
    started = clock()
    last_progress = started
    last_reading = progress()
    seen, history = "nothing yet", []
    delay = interval
    while True:
        try:
            result = probe()
        except Abort:
            raise
        except Exception as exc:  # a socket not there yet, a refused connection: "not yet"
            result = Pending(f"{type(exc).__name__}: {exc}")
        if result is not None and not isinstance(result, Pending):
            return result
        now = clock()
        current = result.seen if isinstance(result, Pending) else "condition false"
        reading = progress()
        if current != seen:  # what the probe sees changed: the awaited thing is moving
            history.append(f"{now - started:.1f}s {current}")
            seen = current
            last_progress = now
        if reading.busy or reading.token != last_reading.token:
            last_progress = now
        last_reading = reading
        if now - last_progress >= budget.stall:
            raise Stalled(what, now - started, budget.stall, seen, reading.text, history)
        if now - started >= budget.ceiling:
            raise WaitTimeout(f"{what} (still making progress: {reading.text})", budget.ceiling, seen, history)
        sleep(delay)
        delay = min(delay * 2, max_interval)


def run_progressing(
    argv: Sequence[str],
    *,
    what: str,
    budget: Budget,
    watch: Callable[[], Iterable[int]] = tuple,
    env: dict[str, str] | None = None,
) -> str:
    """Run argv to its end for as long as it (or the processes `watch` gives, e.g. the daemon doing the work
    it asked for) makes progress; returns its output. CommandError on a non-zero exit; Stalled or
    WaitTimeout (the command killed, its output quoted) when it hung."""
    with tempfile.TemporaryFile() as out:
        proc = subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )

        def output() -> str:
            out.seek(0)
            return out.read().decode(errors="replace")

        def pids() -> list[int]:
            return [proc.pid, *watch()]

        try:
            code = until_progressing(
                lambda: proc.poll() if proc.poll() is not None else Pending(f"pid {proc.pid} running"),
                what=what,
                progress=of_processes(pids),
                budget=budget,
            )
        except WaitTimeout as err:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            tail = "\n".join(output().splitlines()[-20:])
            raise ConformanceError(f"{err}\n  output:\n{tail}") from None
        if code != 0:
            raise CommandError(list(argv), code, output())
        return output()
