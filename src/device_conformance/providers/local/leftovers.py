"""Runs left behind by a crashed or interrupted session: find them, tear them down."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable

from device_conformance.providers.local.layout import RunLayout, state_root
from device_conformance.providers.local.state import RunState
from device_conformance.providers.local.teardown import teardown

# A run writes its state file moments after creating its directory; a state-less directory younger
# than this may belong to another session that is starting up right now.
STARTING_GRACE_SECONDS = 600


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
    cleaned = []
    for layout in all_runs():
        state = _read(layout)
        if isinstance(state, _NoStateYet):
            # Crashed before its state was written: only a directory to remove, unless it is still starting.
            if _age(layout) > STARTING_GRACE_SECONDS:
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
