"""A fake's own process: its own session (a test SIGKILLs it like a crashed vendor binary, and a Ctrl-C of
the test run does not reach it), output appended to a log file, ready once its control socket answers."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from device_conformance.core import timeouts
from device_conformance.core.errors import ConformanceError, WaitTimeout
from device_conformance.host.process import kill_group_of_reaped_leader
from device_conformance.wait.core import Abort
from device_conformance.wait.progress import Budget, of_process, until_progressing

# Fakes answer within milliseconds; a short fixed interval keeps waits on them short.
POLL_INTERVAL = 0.05


class FakeStartError(ConformanceError):
    """The fake's process exited, or never answered on its control socket."""


class FakeProcess:
    """One process at a time for an argv; spawn() again after it ended to start it again."""

    def __init__(self, argv: list[str], log_path: Path) -> None:
        self.argv = argv
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    @property
    def returncode(self) -> int | None:
        return self._proc.poll() if self._proc else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(
        self,
        ping: Callable[[], Any],
        what: str,
        stall: float = timeouts.FAKE_START_STALL,
        ceiling: float = timeouts.FAKE_START_CEILING,
    ) -> None:
        """Start the process and wait until ping() answers, for as long as it makes progress (wait/progress.py):
        a process that exits is reported at once with its log; one that used no CPU and wrote nothing for
        `stall` seconds, or still did not answer at `ceiling`, is killed and reported with its log."""
        with open(self.log_path, "ab") as log:
            log.write(f"=== starting: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=self.log_path.parent,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )

        def probe() -> Any:
            if not self.is_running():
                raise Abort(f"{what}: the process exited with code {self.returncode} before it was ready")
            return ping()

        try:
            until_progressing(
                probe,
                what=what,
                progress=of_process(lambda: self.pid, [self.log_path]),
                budget=Budget(stall, max(ceiling, stall)),
                interval=POLL_INTERVAL,
                max_interval=POLL_INTERVAL,
            )
        except (Abort, WaitTimeout) as err:
            self.kill()
            raise FakeStartError(f"{err}\n  log {self.log_path}:\n{self.log_tail()}") from None

    def kill(self) -> None:
        """SIGKILL the whole session: no cleanup in the fake, its sockets stay behind like after a crash."""
        if self._proc is None:
            return
        if self._proc.returncode is not None:  # reaped before: its pid may be another process's by now
            kill_group_of_reaped_leader(self._proc.pid)
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._proc.pid, signal.SIGKILL)  # alive or a zombie: the pid is still the fake's
        self._proc.wait()

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (the fake removes its sockets), SIGKILL after timeout; returns the exit code."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self._proc.returncode

    def exit_note(self, lines: int = 15) -> str:
        """Why a dead fake no longer answers, for error messages."""
        return f"the process exited with code {self.returncode}; log {self.log_path}:\n{self.log_tail(lines)}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
