"""process.run_passing_interrupts: an interrupted parent lets its child pytest finish its teardown.

The parent below stands for bench/soak.py or `device-conformance matrix`; the child for pytest, which on
SIGINT tears its clusters down (here: writes a file after a while) before it exits."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

CHILD = textwrap.dedent(
    """
    import os, signal, sys, time
    from pathlib import Path
    done = Path(sys.argv[1])
    inherited = "ignored" if signal.getsignal(signal.SIGINT) is signal.SIG_IGN else "default"
    def teardown(signum, _frame):
        time.sleep(0.5)  # a teardown that takes a while
        done.write_text(signal.Signals(signum).name)
        sys.exit(2)
    signal.signal(signal.SIGINT, teardown)
    Path(sys.argv[2]).write_text(f"{inherited} {os.getpid()}")
    while True:
        time.sleep(0.05)
    """
)

PARENT = textwrap.dedent(
    """
    import signal, sys
    from device_conformance.host.process import run_passing_interrupts
    def as_interrupt(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, as_interrupt)  # as bench/soak.py does
    if sys.argv[4] == "ignore-sigint":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a job started with `&` by a script
    with open(sys.argv[3], "wb") as log:
        try:
            run_passing_interrupts([sys.executable, "-c", sys.argv[1], sys.argv[2], sys.argv[5]], stdout=log)
        except KeyboardInterrupt:
            sys.exit(130)
    """
)


@pytest.fixture
def started(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    """The parents a test starts; each, and the child it started, killed when the test ends, passed or not."""
    parents: list[subprocess.Popen[bytes]] = []
    yield parents
    for parent in parents:
        ready = tmp_path / "ready"
        child = ready.read_text().split()[1] if ready.exists() and len(ready.read_text().split()) == 2 else None
        for pid in (parent.pid, int(child) if child else None):
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        parent.wait()


def _parent(tmp_path: Path, sigint: str, started: list) -> tuple[subprocess.Popen[bytes], Path, Path]:
    done, ready, log = tmp_path / "done", tmp_path / "ready", tmp_path / "child.log"
    argv = [sys.executable, "-c", PARENT, CHILD, str(done), str(log), sigint, str(ready)]
    parent = subprocess.Popen(argv)
    started.append(parent)
    deadline = time.monotonic() + 60  # only a hung interpreter start reaches this
    while not ready.exists() or len(ready.read_text().split()) != 2:
        assert parent.poll() is None, f"the parent exited {parent.returncode} before its child was ready"
        assert time.monotonic() < deadline, "the child never wrote its ready file"
        time.sleep(0.02)
    return parent, done, ready


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["sigterm", "sigint"])
def test_an_interrupted_parent_waits_for_its_childs_teardown(
    tmp_path: Path, sig: signal.Signals, started: list
) -> None:
    parent, done, _ = _parent(tmp_path, "ignore-sigint" if sig == signal.SIGTERM else "keep", started)
    parent.send_signal(sig)
    assert parent.wait(timeout=60) == 130, (tmp_path / "child.log").read_text()
    assert done.exists(), "the child's teardown did not run to its end before the parent exited"
    assert done.read_text() == "SIGINT"


def test_a_backgrounded_parent_that_ignored_sigint_still_passes_it_on(tmp_path: Path, started: list) -> None:
    """`nohup make soak &` in a script: SIGINT is ignored from the start, and an ignored signal stays ignored
    across exec, so neither the soak nor its pytest could be stopped with it."""
    parent, done, ready = _parent(tmp_path, "ignore-sigint", started)
    assert ready.read_text().split()[0] == "default", "the child inherited an ignored SIGINT"
    parent.send_signal(signal.SIGINT)
    assert parent.wait(timeout=60) == 130
    assert done.exists(), "the child's teardown did not run to its end before the parent exited"
