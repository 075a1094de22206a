"""Kubelet control, written once for every provider over its KubeletService (node/transport.py):
`node.kubelet.restart()` (to the node Ready in the new kubelet's status, where the node was given the API's
view: `node_ready`), `.stop()`, `.start()`, `.crash()`, `.freeze()` / `.thaw()`, `.stopped()`, health, pid, the
kubelet's log, and its crashes as an outcome: `.wait_exited()`, `.stays_up()`."""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from device_conformance.core import timeouts
from device_conformance.core.errors import BadInput, ConformanceError, WaitTimeout
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.transport import KubeletService
from device_conformance.wait.core import Abort, Pending, stays, until
from device_conformance.wait.progress import Budget, of_values, until_progressing

STOP_TIMEOUT = 60
# A (re)started kubelet gets healthy for as long as it keeps writing its log (wait/progress.py); a wall-clock
# limit here was one a starved machine could exceed.
START_BUDGET = Budget(timeouts.COMPONENT_START_STALL, timeouts.COMPONENT_START_CEILING)
# `docker restart` of a kind node (a command with its own limit).
START_TIMEOUT = 120
# After /healthz, how long a restarted kubelet may take to post a status that says the node is Ready.
READY_TIMEOUT = timeouts.NODE_READY
# A node's status times (metav1.Time) are whole seconds. A kubelet started this long after the old one stopped
# stamps its status with a later second than any the old one did, so its status is told apart from the old one's
# (wait.kube.node_ready_in_a_later_status); started sooner, its first status can be the old one to the second, and
# nothing in the API shows it came (seen on a local cluster: a 0.5 s restart, then 60 s until the next report).
STATUS_TIME_RESOLUTION = 1.0
# How long a supervisor may take to start a SIGKILLed kubelet again (kind's kubelet.service: RestartSec=1s).
CRASH_RESTART_TIMEOUT = 30
LOG_TAIL_LINES = 40
# A SIGSTOP takes effect at once; this only covers a /healthz request already in flight.
FREEZE_TIMEOUT = 10
# How often stays_up() and wait_exited() look at the kubelet (its supervisor's record and its pid: cheap).
EXIT_POLL = 0.5
# At most this many lines of a panic are quoted (the panic line, then the goroutine traces Go prints after it).
PANIC_QUOTE_LINES = 60
# Where a Go program's crash report starts, at the start of a line of the process's stderr: an unrecovered panic
# (runtime/panic.go printpanics: "panic: ", "[recovered]" for a re-panic), a fatal error (runtime.throw: "fatal
# error: "), a fatal signal (runtime/signal_unix.go sighandler: "SIGABRT: abort", "SIGQUIT: quit").
_PANIC_START = re.compile(r"^(?:panic: |fatal error: |SIG[A-Z]+: )")


# The node's readiness as the API shows it, which this layer cannot read (it sits below kube/): given to
# KubeletControl where nodes are built for the suites (fixtures/cluster.py wires wait.kube's
# node_ready_in_a_later_status). Called once the old kubelet has stopped, it notes the status that kubelet posted
# last and returns a check (wait/core.py's convention: None when it holds, else what it saw) that holds once the
# node is Ready in a status posted after that one: by the new kubelet.
NodeReadySince = Callable[[], Callable[[], str | None]]


class KubeletExited(ConformanceError, AssertionError):
    """The kubelet exited while a test required it to stay up; pytest reports it as a failure. `report` is what
    wait_exited() would return: how it ended and the panic quoted from its log."""

    def __init__(self, message: str, report: str) -> None:
        super().__init__(message)
        self.report = report


def panic_quote(log: str, max_lines: int = PANIC_QUOTE_LINES) -> str | None:
    """The last crash report in a kubelet's log, from its "panic: " (or "fatal error: ", "SIGABRT: abort") line
    on: the panic message, then the "goroutine N [running]:" traces; None when the log has none. Longer ones are
    cut after `max_lines` lines, saying how many were left out."""
    lines = log.splitlines()
    starts = [i for i, line in enumerate(lines) if _PANIC_START.match(line)]
    if not starts:
        return None
    # A panic while panicking prints several "panic: " lines in a row: quote from the first of the last run.
    first = starts[-1]
    while first - 1 in starts or (first > 0 and lines[first - 1].startswith("\tpanic: ")):
        first -= 1
    quoted = lines[first:]
    if len(quoted) > max_lines:
        quoted = [*quoted[:max_lines], f"... ({len(quoted) - max_lines} more lines in the kubelet's log)"]
    return "\n".join(quoted)


class KubeletControl:
    def __init__(self, node: str, service: KubeletService, node_ready: NodeReadySince | None = None) -> None:
        self.node = node
        self.service = service
        # What restart() waits on after /healthz (NodeReadySince); None where no API is in reach (a node built
        # without one: unit tests, a provider's own bring-up), and restart() returns at /healthz.
        self.node_ready = node_ready
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

    # -- crashes ------------------------------------------------------------------------------
    def wait_exited(self, timeout: float) -> str:
        """Wait up to `timeout` seconds for the kubelet running now to exit; return how it ended and the panic
        quoted from its log (the lines from "panic:" on, goroutine traces included) or that its log has none.
        A kubelet its supervisor starts again (kind's systemd unit: Restart=always) counts as exited once its
        pid changed. WaitTimeout (an AssertionError) when it still runs after `timeout`."""
        mark, pid = self._started_at, self.service.pid()

        def probe() -> str | Pending:
            gone = self._gone(pid)
            return gone if gone is not None else Pending(f"the kubelet on {self.node} runs (pid {pid})")

        how = until(probe, what=f"the kubelet on {self.node} (pid {pid}) to exit", timeout=timeout, interval=EXIT_POLL)
        return self._exit_report(how, mark)

    def stays_up(self, duration: float, what: str = "") -> None:
        """Assert that the kubelet running now keeps running for `duration` seconds: KubeletExited (an
        AssertionError) at once when it exits, with how it ended and the panic quoted from its log. `what`: the
        situation, for the message (e.g. "while the driver reports an unknown device")."""
        mark, pid = self._started_at, self.service.pid()
        during = f" {what}" if what else ""

        def did_not_stay_up(how: str) -> KubeletExited:
            report = self._exit_report(how, mark)
            return KubeletExited(
                f"the kubelet on {self.node} did not stay up for {duration:.0f}s{during}: {report}", report
            )

        if pid == 0:
            # Gone before the window opened (on a busy machine the caller may be slower than a crash): the same
            # failure, with the same report, as an exit inside it.
            raise did_not_stay_up(self.service.exited() or "is not running")

        def exited() -> None:
            gone = self._gone(pid)
            if gone is not None:
                raise did_not_stay_up(gone)

        stays(exited, what=f"the kubelet on {self.node} to stay up", duration=duration, interval=EXIT_POLL)

    def _gone(self, pid: int) -> str | None:
        """How the kubelet that ran as `pid` ended; None while it still runs."""
        gone = self.service.exited()
        if gone is not None:
            return gone
        now = self.service.pid()
        if now == pid:
            return None
        if now == 0:
            return f"exited (pid {pid} is gone)"
        return f"exited and was started again by its supervisor (pid {pid} -> {now})"

    def _exit_report(self, how: str, mark: int) -> str:
        try:
            log = self.service.log_since(mark)
        except Exception as exc:  # the log is for the message only
            return f"{how}; its log is not readable ({type(exc).__name__}: {exc})"
        quote = panic_quote(log)
        if quote is None:
            return f"{how}; no panic in its log since it was started"
        return f"{how}; its log from the panic on:\n{quote}"

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

    def restart(self, *, wait_ready: bool = True) -> None:
        """Graceful restart of the kubelet that runs (a swapped-in binary stays); returns once the node is Ready
        in a status the new kubelet posted (after its /healthz answered ok), as the API shows it: a test goes
        on with a node the scheduler and the controllers see as the new kubelet's. The old kubelet's status
        does not count: a restart does not make the node NotReady (its Lease and status stay fresh for
        node-monitor-grace-period, 40 s).

        wait_ready=False returns at /healthz, for a test that acts while the kubelet is still starting (what it
        does before its first status, its runtime snapshot at start, a fault it meets at start that would keep
        the node NotReady). A node without `node_ready` (built without an API: unit tests, a provider's own
        bring-up) returns at /healthz either way; the suites' nodes have it (fixtures/cluster.py).

        ConformanceError (with the kubelet's log since its start) when the new kubelet exits before either;
        WaitTimeout (an AssertionError: a finding, not a harness error) when the node is not Ready in a status
        of the new kubelet within READY_TIMEOUT of /healthz, naming what the API showed last."""
        self.stop()
        stopped = time.monotonic()
        ready: Callable[[], str | None] | None = None
        try:
            if wait_ready and self.node_ready is not None:
                # Noted with the old kubelet gone: no status it posts can come after this.
                ready = self.node_ready()
                # Not a wait for an event: the node's clock passing a second, which nothing shows (the old kubelet
                # is gone); what it costs is at most that second.
                time.sleep(max(0.0, STATUS_TIME_RESOLUTION - (time.monotonic() - stopped)))
        finally:
            # Also when the API did not answer: a restart never leaves the kubelet stopped.
            self._start(*self._running)
        if ready is not None:
            self._wait_ready(ready)

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

    def send_signal(self, sig: signal.Signals) -> None:
        """Send `sig` to the running kubelet and return: no wait, and no restart but what its supervisor does
        (e.g. SIGABRT: Go's crash report of every goroutine, then exit status 2; see wait_exited())."""
        self.service.signal(sig)

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
    def _wait_ready(self, ready: Callable[[], str | None]) -> None:
        """Until `ready` holds (the node Ready in a status of the kubelet started last); at once, with its log,
        when that kubelet exits meanwhile."""

        def probe() -> bool | Pending:
            seen = ready()
            if seen is None:
                return True
            gone = self.service.exited()
            if gone is not None:
                raise Abort(f"the kubelet on {self.node} {gone} before it posted a Ready status; last seen: {seen}")
            return Pending(seen)

        try:
            until(
                probe,
                what=f"node {self.node} to be Ready in a status posted by its restarted kubelet",
                timeout=READY_TIMEOUT,
            )
        except Abort as exc:
            raise ConformanceError(f"{exc}\n{self._log_tail()}") from None

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
