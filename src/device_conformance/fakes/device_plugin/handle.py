"""Start the fake device plugin as a separate process and control it; used by tests and fixtures."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from device_conformance.errors import BadInput, ConformanceError
from device_conformance.fakes.device_plugin.calllog import CallRecord, RegistrationRecord, read_call_log
from device_conformance.fakes.device_plugin.client import ControlError, DevicePluginControl
from device_conformance.fakes.device_plugin.config import DevicePluginConfig
from device_conformance.fakes.device_plugin.server import remove_socket
from device_conformance.fakes.waiting import NotYet

SUN_PATH_MAX = 107  # bytes a Unix socket path may have on Linux (sun_path is 108 with the NUL)


def plugin_argv(config_path: str | Path, *, python: str = sys.executable, exit_with_parent: bool = False) -> list[str]:
    """The command line that runs the plugin; a provider can run it on any host with this package."""
    argv = [python, "-m", "device_conformance.fakes.device_plugin", "--config", str(config_path)]
    return [*argv, "--exit-with-parent"] if exit_with_parent else argv


def _check_socket_path(path: str, what: str) -> None:
    if len(os.fsencode(path)) > SUN_PATH_MAX:
        raise BadInput(
            f"{what} path is {len(os.fsencode(path))} bytes, over the {SUN_PATH_MAX}-byte limit: {path}",
            "use a shorter directory, e.g. one from tempfile.mkdtemp(dir='/tmp')",
        )


def _spawn(config_path: Path, log_path: Path, python: str) -> subprocess.Popen[bytes]:
    """Own session, so kill() reaches the whole group and a Ctrl-C of the test run does not."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            plugin_argv(config_path, python=python, exit_with_parent=True),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=config_path.parent,
            start_new_session=True,
        )


class DevicePluginHandle(DevicePluginControl):
    def __init__(
        self,
        config: DevicePluginConfig,
        workdir: Path,
        process: subprocess.Popen[bytes],
        short_dir: str | None = None,
        python: str = sys.executable,
    ) -> None:
        super().__init__(config.control_socket, name=f"fake device plugin {config.resource_name} (pid {process.pid})")
        self.config, self.workdir, self.process = config, workdir, process
        self.log_path = workdir / f"{Path(config.socket_name).stem}.log"
        self._short_dir = short_dir
        self._socket_names = {config.socket_name}
        self._python = python

    @classmethod
    def start(
        cls, config: DevicePluginConfig, workdir: str | Path, *, timeout: float = 30.0, python: str = sys.executable
    ) -> DevicePluginHandle:
        """Spawn the plugin (own session, output to <workdir>/<socket stem>.log) and wait until its
        control socket answers, which is after it serves and made its first registration attempt."""
        workdir = Path(workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        stem = Path(config.socket_name).stem
        short_dir = None
        control = config.control_socket or str(workdir / f"{stem}.ctl")
        if not config.control_socket and len(os.fsencode(control)) > SUN_PATH_MAX:
            short_dir = tempfile.mkdtemp(prefix="dp-", dir="/tmp")
            control = os.path.join(short_dir, "ctl")
        config = dataclasses.replace(
            config, control_socket=control, call_log=config.call_log or str(workdir / f"{stem}.calls.jsonl")
        )
        _check_socket_path(config.socket_path(), "device plugin socket")
        _check_socket_path(config.kubelet_socket_path, "kubelet socket")
        _check_socket_path(config.control_socket, "control socket")
        config_path = workdir / f"{stem}.json"
        config.save(config_path)
        handle = cls(config, workdir, _spawn(config_path, workdir / f"{stem}.log", python), short_dir, python)
        try:
            handle._wait_ready(timeout)
        except BaseException:
            handle.cleanup()
            raise
        return handle

    def respawn(self, timeout: float = 30.0) -> None:
        """Start the plugin again after kill() or stop(), same config: same sockets, and the call log
        file continues (seq goes on). Like a plugin pod being re-created on the node."""
        if self.is_running():
            raise ConformanceError(f"{self.name} is still running; kill() or stop() it before respawn()")
        self.process = _spawn(self.workdir / f"{Path(self.config.socket_name).stem}.json", self.log_path, self._python)
        self.name = f"fake device plugin {self.config.resource_name} (pid {self.process.pid})"
        self._wait_ready(timeout)

    def _wait_ready(self, timeout: float) -> None:
        self._wait(f"{self.name} to answer on {self.config.control_socket}", self._probe_ready, timeout)

    # -- process control -------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        return self.process.pid

    def is_running(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL, like a crashed plugin: its sockets stay behind, the call log stays readable."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM and wait (SIGKILL after timeout); returns the exit code (0 = clean shutdown)."""
        if self.is_running():
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.process.returncode

    def cleanup(self) -> None:
        """Idempotent: stop the process if needed and remove every socket it may have left."""
        self.stop()
        for name in self._socket_names:
            remove_socket(self.config.socket_path(name))
        remove_socket(self.config.control_socket)
        if self._short_dir:
            shutil.rmtree(self._short_dir, ignore_errors=True)

    def __enter__(self) -> DevicePluginHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    # -- artifacts -------------------------------------------------------------------------------

    def logged_calls(self) -> list[CallRecord]:
        """The call log file, every process that used it; readable after kill()."""
        return read_call_log(self.config.call_log)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    # -- overrides -------------------------------------------------------------------------------

    def register(
        self, socket_name: str | None = None, version: str | None = None, resource_name: str | None = None
    ) -> RegistrationRecord:
        if socket_name:
            self._socket_names.add(socket_name)
        return super().register(socket_name, version, resource_name)

    def start_serving(self, socket_name: str | None = None) -> None:
        if socket_name:
            self._socket_names.add(socket_name)
        super().start_serving(socket_name)

    def _probe_ready(self) -> Any:
        if not self.is_running():
            raise ConformanceError(
                f"{self.name} exited with code {self.process.returncode} before it was ready;"
                f" log {self.log_path}:\n{self.log_tail()}"
            )
        try:
            return self._call("ping")
        except ControlError as err:
            raise NotYet(str(err)) from err

    def _call(self, op: str, **args: Any) -> Any:
        try:
            return super()._call(op, **args)
        except ControlError as err:
            if self.is_running():
                raise
            raise ControlError(
                f"{err}\n  the process exited with code {self.process.returncode};"
                f" log {self.log_path}:\n{self.log_tail(15)}"
            ) from err
