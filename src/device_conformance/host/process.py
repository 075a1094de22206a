"""Running local commands: argv lists only, output captured, failures raised with their output."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from device_conformance.core.errors import CommandError


def run(
    argv: Sequence[str],
    *,
    check: bool = True,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 300,
    input_text: str | None = None,
    cwd: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run argv, capture stdout+stderr together, raise CommandError on a non-zero exit when check."""
    merged_env = {**os.environ, **env} if env else None
    proc = subprocess.run(
        list(argv),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=merged_env,
        timeout=timeout,
        input=input_text,
        cwd=cwd,
        check=False,
    )
    if check and proc.returncode != 0:
        raise CommandError(list(argv), proc.returncode, proc.stdout)
    return proc


# How long a child pytest gets to tear its clusters down after the interrupt is passed on: bench/interrupt.py
# measured every SIGINTed run exiting well inside 240 s, its own hang threshold, on this kind of machine.
INTERRUPT_GRACE_S = 240.0


def run_passing_interrupts(
    argv: Sequence[str],
    *,
    stdout: IO[bytes],
    env: Mapping[str, str] | None = None,
    cwd: str | Path | None = None,
    grace_s: float = INTERRUPT_GRACE_S,
) -> int:
    """Run a child that tears down what it starts (pytest); its exit status.

    The child gets a process group of its own, as a terminal's foreground job. A KeyboardInterrupt here
    (Ctrl-C, or SIGTERM turned into one) is passed on as SIGINT to that whole group, as a terminal's Ctrl-C
    would be, and the child is waited for, up to grace_s, so that its teardown finishes before the interrupt
    goes on. subprocess.run would SIGKILL the child instead and leave its clusters running. A second
    interrupt, or a child still there after grace_s, gets SIGKILL."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A job started with `&` by a non-interactive shell ignores SIGINT, and an ignored signal stays ignored
        # across exec: the child could never be interrupted. A handler is reset to the default by exec.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    proc = subprocess.Popen(
        list(argv),
        stdin=subprocess.DEVNULL,
        stdout=stdout,
        stderr=subprocess.STDOUT,
        env=dict(env) if env is not None else None,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        return proc.wait()
    except KeyboardInterrupt:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=grace_s)
        except (KeyboardInterrupt, subprocess.TimeoutExpired):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise


def pid_alive(pid: int) -> bool:
    """True while a process with this pid exists (zombies of our own children count as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def terminate(pid: int, *, grace: float = 10.0, sig: int = signal.SIGTERM) -> None:
    """Send sig, wait up to grace seconds for the process to go, then SIGKILL it."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(pid)
        if not pid_alive(pid):
            return
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    while pid_alive(pid):
        _reap(pid)
        time.sleep(0.02)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def kill_group_of_reaped_leader(pgid: int) -> None:
    """SIGKILL what is left of the process group of a leader we already reaped (a shell wrapper's children).

    Never when the leader's pid is in use again: the kernel does not hand out a pid that is still some group's
    id, so a live process with that pid means no member of the old group is left, and the pid (which wraps in
    minutes on a busy host: pid_max 32768) now belongs to someone else, maybe another cluster's container."""
    if Path(f"/proc/{pgid}").exists():
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
