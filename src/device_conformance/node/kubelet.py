"""Kubelet control, written once for every provider over its KubeletService (node/transport.py):
`node.kubelet.restart()`, `.stop()`, `.start()`, `.crash()`, `.freeze()` / `.thaw()`, `.stopped()`,
health, pid and the kubelet's log."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from device_conformance import timeouts
from device_conformance.errors import BadInput, ConformanceError, WaitTimeout
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.transport import KubeletService
from device_conformance.wait.core import Abort, Pending, until
from device_conformance.wait.progress import Budget, of_values, until_progressing

STOP_TIMEOUT = 60
# A (re)started kubelet gets healthy for as long as it keeps writing its log (wait/progress.py); a wall-clock
# limit here was one a starved machine could exceed.
START_BUDGET = Budget(timeouts.COMPONENT_START_STALL, timeouts.COMPONENT_START_CEILING)
# `docker restart` of a kind node (a command with its own limit).
START_TIMEOUT = 120
# How long a supervisor may take to start a SIGKILLed kubelet again (kind's kubelet.service: RestartSec=1s).
CRASH_RESTART_TIMEOUT = 30
LOG_TAIL_LINES = 40
# A SIGSTOP takes effect at once; this only covers a /healthz request already in flight.
FREEZE_TIMEOUT = 10


class KubeletControl:
    def __init__(self, node: str, service: KubeletService) -> None:
        self.node = node
        self.service = service
        # The kubelet started last (binary, version); None, None: the node's own. A restart, a crash and
        # stopped() bring back this one, so a swapped-in kubelet stays until start() without arguments.
        self._running: tuple[Path | None, KubeVersion | None] = (None, None)
        self._started_at = 0  # log mark of the last start: error messages show what the kubelet logged since

    # -- state -------------------------------------------------------------------------------
    def pid(self) -> int:
        """The running kubelet's pid on the node; 0 while none runs."""
        return self.service.pid()

    def healthy(self) -> bool:
        return self.service.healthy()

    def wait_healthy(self, timeout: float | None = None) -> None:
        """Wait for /healthz to answer ok; ConformanceError (with the kubelet's log since its start) at once
        when the kubelet exited for good. Without `timeout`, for as long as the kubelet writes its log (and at
        most START_BUDGET's ceiling); a caller's `timeout` is a claim about the kubelet, kept in wall time."""

        def probe() -> bool | Pending:
            if self.service.healthy():
                return True
            gone = self.service.exited()
            if gone is not None:
                raise Abort(f"the kubelet on {self.node} {gone}")
            return Pending(f"healthz on {self.node} does not answer ok")

        budget = START_BUDGET if timeout is None else Budget(timeout, timeout)
        try:
            until_progressing(
                probe,
                what=f"the kubelet on {self.node} to be healthy",
                progress=of_values(lambda: (self.service.pid(), self.service.log_mark()), "kubelet (pid, log mark): "),
                budget=budget,
            )
        except (Abort, WaitTimeout) as exc:
            raise ConformanceError(f"{exc}\n{self._log_tail()}") from None

    # -- lifecycle ---------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop the kubelet (its supervisor keeps it down) and wait until /healthz no longer answers."""
        if self.pid():
            self.service.signal(signal.SIGCONT)  # a frozen kubelet cannot act on SIGTERM
        self.service.stop()
        until(
            lambda: True if not self.healthy() else Pending("healthz still answers"),
            what=f"the kubelet's healthz on {self.node} to stop answering",
            timeout=STOP_TIMEOUT,
        )

    def start(self, binary: Path | None = None, version: KubeVersion | None = None) -> None:
        """Start the kubelet and wait for its health. `binary` (resolved by the caller, e.g. the upgrade_from
        fixture) runs instead of the node's own kubelet, configured for `version`; without arguments the
        node's own kubelet and settings run, put back if another was swapped in."""
        if binary is None and version is not None:
            raise BadInput(
                f"kubelet.start(version={version}) without its binary",
                "pass binary= too (the resolved kubelet of that version); the node layer builds nothing",
            )
        if self.pid():
            raise ConformanceError(f"kubelet.start: the kubelet on {self.node} is already running; stop it first")
        self._start(binary, version)

    def restart(self) -> None:
        """Graceful restart of the kubelet that runs (a swapped-in binary stays), then wait for its health."""
        self.stop()
        self._start(*self._running)

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """The kubelet stopped for the body; started again afterwards (the same kubelet), also when the body
        raised, unless the body started it itself."""
        self.stop()
        try:
            yield
        finally:
            if not self.pid():
                self._start(*self._running)

    def crash(self) -> None:
        """SIGKILL the kubelet; wait for its supervisor to start it again (a new pid) and for its health."""
        killed = self.pid()
        if killed == 0:
            raise ConformanceError(f"kubelet.crash: no kubelet runs on {self.node}")
        self.service.signal(signal.SIGKILL)
        until(
            lambda: True if self.pid() not in (0, killed) else Pending("no new kubelet pid yet"),
            what=f"the supervisor on {self.node} to restart the SIGKILLed kubelet (pid {killed})",
            timeout=CRASH_RESTART_TIMEOUT,
        )
        self.wait_healthy()

    def freeze(self) -> None:
        """SIGSTOP: the process stays, /healthz stops answering. Returns once it has: a request already
        being served when the signal lands may still be answered, more so on a loaded machine."""
        self.service.signal(signal.SIGSTOP)

        def probe() -> bool | Pending:
            return True if not self.service.healthy() else Pending("/healthz still answers ok")

        until(probe, timeout=FREEZE_TIMEOUT, what=f"the SIGSTOPped kubelet on {self.node} to stop answering /healthz")

    def thaw(self) -> None:
        """SIGCONT after freeze()."""
        self.service.signal(signal.SIGCONT)

    # -- log ---------------------------------------------------------------------------------
    def log_mark(self) -> int:
        """A position in the kubelet's log; pass it to log_since()."""
        return self.service.log_mark()

    def log_since(self, mark: int) -> str:
        return self.service.log_since(mark)

    # -- internals ---------------------------------------------------------------------------
    def _start(self, binary: Path | None, version: KubeVersion | None) -> None:
        self._running = (binary, version)
        self._started_at = self.service.log_mark()
        self.service.start(binary, version)
        self.wait_healthy()

    def _log_tail(self) -> str:
        try:
            lines = self.service.log_since(self._started_at).splitlines()[-LOG_TAIL_LINES:]
        except Exception as exc:  # the log is for the message only; it must not hide the real failure
            return f"(no kubelet log: {type(exc).__name__}: {exc})"
        return f"the kubelet's log since it was started (last {LOG_TAIL_LINES} lines):\n" + "\n".join(lines)
