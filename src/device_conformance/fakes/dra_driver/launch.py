"""Starting and ending the driver process: its own session, output to a log, ready when control answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from device_conformance.errors import ConformanceError, WaitTimeout
from device_conformance.fakes.dra_driver import control
from device_conformance.fakes.dra_driver.config import DriverConfig
from device_conformance.fakes.dra_driver.polling import wait_until

MODULE = "device_conformance.fakes.dra_driver"


class DriverStartError(ConformanceError):
    """The driver process exited or never answered on its control socket."""


class DriverProcess:
    """One driver process at a time for a config file; spawn() again after it ended to restart."""

    def __init__(self, config: DriverConfig, config_path: Path, log_path: Path) -> None:
        self.config = config
        self.config_path = config_path
        self.log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def argv(self) -> list[str]:
        return [sys.executable, "-m", MODULE, "--config", str(self.config_path)]

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def is_running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def spawn(self, ready_timeout: float) -> None:
        self.config.validate()
        self.config_path.write_text(self.config.to_json())
        with open(self.log_path, "ab") as log:
            log.write(f"=== starting: {' '.join(self.argv)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a Ctrl-C or a kill of the test's process group must not reach it
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            wait_until(
                f"fake DRA driver {self.config.driver_name} to answer on {self.config.control_socket}",
                self._ping,
                lambda ok: ok,
                lambda _: "no answer on the control socket",
                ready_timeout,
                self.is_running,
            )
        except WaitTimeout as exc:
            self.kill()
            raise DriverStartError(f"{exc}\n  driver log {self.log_path}:\n{self.log_tail()}") from None

    def _ping(self) -> bool:
        try:
            control.call(self.config.control_socket, "ping", timeout=2)
            return True
        except OSError:
            return False

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def kill(self) -> None:
        """SIGKILL: no cleanup in the driver, so its sockets stay behind like after a crash."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait()

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM (the driver removes its sockets), SIGKILL after timeout; returns the exit code."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self._proc.returncode
