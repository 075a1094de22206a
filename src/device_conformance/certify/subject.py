"""The subject's process when the certifier starts it (`--command`): own session, output to a log,
stopped with SIGTERM (then SIGKILL) to its whole process group, restartable for the restart clauses.

It remembers every exit the tool did not ask for (`crashes`), found when it is polled, stopped or restarted,
so a crash is still seen when a step restarted the subject before the step ended (certify/crash.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from device_conformance.host.process import kill_group_of_reaped_leader

# A vendor binary gets this long to exit on SIGTERM before it is killed (the kubelet's pods get 30 s by
# default; a plugin process on its own should need far less).
STOP_GRACE = 10.0
# Lines of the subject's log quoted in a FAIL's evidence: enough for a Go panic's message and the top of its
# goroutine trace, short enough to read in a report.
LOG_TAIL_LINES = 15
START_MARKER = "=== certifier starting"


class SubjectProcess:
    def __init__(self, command: str, log_path: Path, env: dict[str, str] | None = None) -> None:
        self.command, self.log_path = command, log_path
        self._env = {**os.environ, **(env or {})}
        self._proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.started_at = 0.0  # time.monotonic() of the last start
        # Exits the tool did not cause, in order ("exit 2", "killed by SIGSEGV"), one per process start.
        self.crashes: list[str] = []
        self._crash_seen_for = 0  # the start number whose crash is already in `crashes`

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            log.write(f"{START_MARKER} (#{self.starts + 1}): {self.command}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                ["/bin/sh", "-c", f"exec {self.command}"],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=self._env,
            )
        self.starts += 1
        self.started_at = time.monotonic()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def running(self) -> bool:
        alive = self._proc is not None and self._proc.poll() is None
        if not alive:
            self._note_crash()
        return alive

    def _note_crash(self) -> None:
        """Record the current process's exit once, when it ended without the tool stopping it."""
        if self._proc is None or self._proc.poll() is None or self._crash_seen_for == self.starts:
            return
        self._crash_seen_for = self.starts
        self.crashes.append(self.exit_status())

    def exited_within(self, seconds: float) -> bool:
        """Whether it has ended, or ends within `seconds`: a process that closed its socket while dying may
        not be reaped yet when the call it broke returns."""
        if self._proc is None:
            return False
        try:
            self._proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            return False
        self._note_crash()
        return True

    def exit_status(self) -> str:
        """How it ended, for evidence: 'running', 'exit 3' or 'killed by SIGABRT'."""
        code = self._proc.poll() if self._proc else None
        if code is None:
            return "running" if self._proc else "not started"
        return f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit {code}"

    def stop(self) -> str:
        """SIGTERM to the group, SIGKILL after STOP_GRACE; returns how it ended."""
        proc = self._proc
        if proc is None:
            return "not started"
        self._note_crash()  # an exit before we signal is the subject's own
        if proc.poll() is None:
            self._crash_seen_for = self.starts  # this exit is ours
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        # Children the subject left in its group go too (a shell wrapper's plugin, say).
        kill_group_of_reaped_leader(proc.pid)
        return self.exit_status()

    def restart(self) -> str:
        ended = self.stop()  # reaped: the new process cannot race the old one's exit
        self.start()
        return ended

    def log_tail(self, lines: int = LOG_TAIL_LINES, *, this_start: bool = False) -> list[str]:
        """The log's last `lines` lines; with this_start, only those the current process wrote."""
        try:
            text = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return []
        if this_start:
            marker = max((n for n, line in enumerate(text) if line.startswith(START_MARKER)), default=-1)
            text = text[marker + 1 :]
        return text[-lines:]
