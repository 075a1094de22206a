"""Runs left behind by a crashed or interrupted session: find them, tear them down."""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from device_conformance.providers.local.layout import RunLayout, state_root
from device_conformance.providers.local.state import RunState
from device_conformance.providers.local.teardown import teardown

# A run writes its state file moments after creating its directory; a state-less directory younger
# than this may belong to another session that is starting up right now.
STARTING_GRACE_SECONDS = 600


def journal_path() -> Path:
    """Every clean-up of this machine, whichever session or worker made it: a worker's own output is not kept
    under xdist, and a run torn down by another session's clean-up must be traceable to it."""
    return state_root() / "cleanups.log"


def journal(message: str) -> None:
    """One line in the journal, stamped with the time and this process's pid."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    try:
        with journal_path().open("a") as file:
            file.write(f"{stamp} pid {os.getpid()}: {message}\n")
    except OSError:
        pass  # the journal explains a clean-up; it must never stop one


def _journaled(log: Callable[[str], None]) -> Callable[[str], None]:
    def log_and_journal(message: str) -> None:
        log(message)
        journal(message)

    return log_and_journal


def all_runs() -> list[RunLayout]:
    runs = state_root() / "runs"
    return [RunLayout(path) for path in sorted(runs.iterdir())] if runs.exists() else []


class _NoStateYet:
    """A run directory whose state file was missing when read."""


def _read(layout: RunLayout) -> RunState | _NoStateYet | None:
    """The run's state, _NoStateYet when the file is missing, None when it is there but unreadable: one read, so a
    run starting right now (its first save lands under the port lock) is never judged on two looks."""
    try:
        return RunState.load(layout)
    except FileNotFoundError:
        return _NoStateYet()
    except (OSError, ValueError, TypeError, json.JSONDecodeError):
        return None


def _load(layout: RunLayout) -> RunState | None:
    """The run's state, or None when it is missing or unreadable."""
    state = _read(layout)
    return None if isinstance(state, _NoStateYet) else state


def live_port_bases() -> set[int]:
    """Port blocks of runs that are still in use (owner alive, or kept on purpose)."""
    bases = set()
    for layout in all_runs():
        state = _load(layout)
        if state is not None and (state.kept or state.owner_alive()) and state.ports:
            bases.add(state.ports["etcd_client"])
    return bases


def clean_leftovers(log: Callable[[str], None] = print) -> list[str]:
    """Tear down every run whose owner is gone and that was not kept; returns their ids."""
    log = _journaled(log)
    cleaned = []
    for layout in all_runs():
        state = _read(layout)
        if isinstance(state, _NoStateYet):
            # Crashed before its state was written: only a directory to remove, unless it is still starting.
            if _age(layout) > STARTING_GRACE_SECONDS:
                log(f"removing run directory {layout.root}: no state file after {STARTING_GRACE_SECONDS} s")
                shutil.rmtree(layout.root, ignore_errors=True)
            continue
        if state is not None and (state.kept or state.owner_alive()):
            continue
        owner = f"owner pid {state.owner_pid} is gone" if state else "state unreadable"
        log(f"found run {layout.run_id} left by a crashed or interrupted session ({owner}); cleaning it up")
        problems = teardown(layout, log)
        for problem in problems:
            log(f"  could not clean: {problem}")
        cleaned.append(layout.run_id)
    return cleaned


def _age(layout: RunLayout) -> float:
    try:
        return time.time() - layout.root.stat().st_mtime
    except OSError:
        return 0.0
