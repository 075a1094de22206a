"""What a test holds for one fake (device plugin or DRA driver): its process, its control channel, its
call log and its faults, the same for every fake. Subclasses add the verbs of their own API."""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import grpc

from device_conformance.core import timeouts
from device_conformance.core.errors import ConformanceError
from device_conformance.fakes.common.calls import RPC, Call, Registration, read_calls, summarize
from device_conformance.fakes.common.control import ControlClient, ControlError
from device_conformance.fakes.common.faults import BLOCK, CLAIM_ERROR, CRASH, DELAY, ERROR, PANIC, BlockedCall, Fault
from device_conformance.fakes.common.process import POLL_INTERVAL, FakeProcess
from device_conformance.fakes.common.sockets import remove_socket
from device_conformance.wait.core import Abort, Pending, until

T = TypeVar("T")


def code_name(code: str | grpc.StatusCode) -> str:
    """The fake checks the name (its refusal comes back as a ControlError)."""
    return code.name if isinstance(code, grpc.StatusCode) else code


# What a handle can do. Our fakes have all of them; a vendor's subject (vendor_handles.py) only PROCESS.
PROCESS = "process"  # start, stop (SIGTERM), kill (SIGKILL), restart with the same paths
FAULTS = "faults"  # make an RPC fail, block, delay, crash or panic on demand
CALL_LOG = "call-log"  # every RPC the kubelet made, with requests and answers
CONTROL = "control"  # told at run time what to serve (devices, health, slices, registration)
FAKE_CAPABILITIES = frozenset({PROCESS, FAULTS, CALL_LOG, CONTROL})


class ProcessHandle:
    """The process verbs every handle has, ours or a vendor's: over one FakeProcess (`self.process`)."""

    process: FakeProcess

    @property
    def name(self) -> str:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    def is_running(self) -> bool:
        return self.process.is_running()

    def kill(self) -> None:
        """SIGKILL, like a crashed vendor binary: its sockets stay behind (a fake's call log stays readable)."""
        self.process.kill()

    def log_tail(self, lines: int = 30) -> str:
        """The last lines of the process's own output (all its runs)."""
        return self.process.log_tail(lines)


class FakeHandle(ProcessHandle):
    CAPABILITIES: ClassVar[frozenset[str]] = FAKE_CAPABILITIES
    # Set by each fake: the call that carries the kubelet's registration verdict, and how to read it.
    REGISTRATION_METHOD: ClassVar[str]
    REGISTRATION_KIND: ClassVar[str] = RPC
    WAIT_TIMEOUT: ClassVar[float]  # default of the wait_for_* methods
    CONTROL_TIMEOUT: ClassVar[float]
    # Seconds a starting fake may go without progress (CPU, its log) before it counts as hung: not a wall-clock
    # budget, which a starved machine exceeds (wait/progress.py).
    START_STALL: ClassVar[float] = timeouts.FAKE_START_STALL

    def __init__(self, title: str, process: FakeProcess, control_socket: str, call_log: str) -> None:
        self.title, self.process, self.control_socket, self.call_log = title, process, control_socket, call_log
        self._short_dir: str | None = None  # a /tmp directory holding the control socket, if it needed one

    @property
    def name(self) -> str:
        return f"{self.title} (pid {self.pid})"

    # -- the process (pid, log_path, is_running, kill, log_tail: ProcessHandle) ------------------------

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM and wait (SIGKILL after timeout); returns the exit code (0 = clean shutdown)."""
        return self.process.stop(timeout)

    def respawn(self, stall: float | None = None) -> None:
        """Start the fake again after kill() or stop(), same config: same sockets, and the call log
        continues (seq goes on). Like a plugin pod being re-created on the node. `stall`: seconds without
        progress before a start counts as hung (default START_STALL)."""
        if self.is_running():
            raise ConformanceError(f"{self.name} is still running; kill() or stop() it before respawn()")
        self.process.spawn(
            lambda: self.control("ping"),
            f"{self.title} to answer on {self.control_socket}",
            self.START_STALL if stall is None else stall,
        )

    def restart(self, *, kill: bool = False, stall: float | None = None) -> None:
        """Stop (or SIGKILL) and start again with the same config."""
        if kill:
            self.kill()
        else:
            self.stop()
        self.respawn(stall)

    def cleanup(self) -> None:
        """Idempotent: no process, no socket and no temporary directory left behind."""
        self.stop()
        for path in [*self._sockets(), self.control_socket]:
            remove_socket(path)
        if self._short_dir:
            shutil.rmtree(self._short_dir, ignore_errors=True)
            self._short_dir = None

    def __enter__(self) -> FakeHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.cleanup()

    def _sockets(self) -> Iterable[str]:
        """Every socket the fake may have left behind (besides its control socket)."""
        raise NotImplementedError

    # -- the control channel -------------------------------------------------------------------------

    def control(self, op: str, *, control_timeout: float | None = None, **args: Any) -> Any:
        """Any control operation of the fake by name."""
        client = ControlClient(self.control_socket, timeout=self.CONTROL_TIMEOUT)
        try:
            return client.call(op, args, timeout=control_timeout)
        except ControlError as err:
            note = "" if self.is_running() else f"\n  {self.process.exit_note()}"
            raise ControlError(f"{self.name}: {err}{note}") from err

    def status(self) -> dict[str, Any]:
        return self.control("status")

    # -- faults --------------------------------------------------------------------------------------

    def inject(self, fault: Fault) -> None:
        self.control("add_fault", fault=dataclasses.asdict(fault))

    def fail(
        self,
        method: str,
        code: str | grpc.StatusCode = "UNKNOWN",
        message: str = "injected failure",
        *,
        claim_uid: str | None = None,
        times: int | None = None,
    ) -> None:
        """Make `method` (e.g. "Allocate") end with this gRPC status; only the next `times` calls if given."""
        self.inject(Fault(method, ERROR, code_name(code), message, claim_uid=claim_uid, times=times))

    def fail_claims(self, method: str, message: str, *, claim_uid: str | None = None, times: int | None = None) -> None:
        """Answer `method` with `message` as the error of each claim (or only claim_uid)."""
        self.inject(Fault(method, CLAIM_ERROR, message=message, claim_uid=claim_uid, times=times))

    def block(self, method: str, *, claim_uid: str | None = None) -> None:
        """Calls of `method` wait (after being logged) until unblock() or clear_faults()."""
        self.inject(Fault(method, BLOCK, claim_uid=claim_uid))

    def delay(self, method: str, seconds: float, *, claim_uid: str | None = None, times: int | None = None) -> None:
        self.inject(Fault(method, DELAY, seconds=seconds, claim_uid=claim_uid, times=times))

    def crash(self, method: str, *, claim_uid: str | None = None) -> None:
        """The next call of `method` SIGKILLs the fake's process while the call is in flight."""
        self.inject(Fault(method, CRASH, claim_uid=claim_uid))

    def panic(self, method: str, message: str, *, claim_uid: str | None = None) -> None:
        """The next call of `method` ends the fake's process as a Go binary's panic does: "panic: <message>" in its
        log, exit status 2, while the call is in flight."""
        self.inject(Fault(method, PANIC, message=message, claim_uid=claim_uid))

    def unblock(self, method: str | None = None, *, claim_uid: str | None = None) -> None:
        self.control("unblock", method=method, claim_uid=claim_uid)

    def clear_faults(self, method: str | None = None) -> None:
        """Drop every fault (of one method); held calls go on."""
        self.control("clear_faults", method=method)

    def blocked_calls(self) -> list[BlockedCall]:
        return [BlockedCall(**b) for b in self.control("blocked_calls")]

    def wait_for_blocked(self, method: str, count: int = 1, *, timeout: float | None = None) -> list[BlockedCall]:
        """Wait until `count` calls of `method` are held by a block; returns them."""

        def probe() -> list[BlockedCall] | Pending:
            held = [b for b in self.blocked_calls() if b.method == method]
            if len(held) >= count:
                return held
            return Pending(f"{len(held)} blocked; latest calls: {summarize(self.calls()[-5:])}")

        return self.wait(f"{count} blocked {method} call(s)", probe, timeout)

    # -- what the fake saw (the call log file: every run of it, readable after a SIGKILL) --------------

    def calls(self, method: str | None = None, *, kind: str | None = RPC) -> list[Call]:
        """Calls in order; by default only RPCs the kubelet made (kind=None gives every record)."""
        return [c for c in read_calls(self.call_log) if kind in (None, c.kind) and method in (None, c.method)]

    def wait_for_call(
        self, method: str, count: int = 1, *, done: bool = False, ok: bool | None = None, timeout: float | None = None
    ) -> list[Call]:
        """Wait until `method` was called at least `count` times (finished, if done; finished with that
        outcome, if ok is given); returns those calls."""
        finished = done or ok is not None

        def probe() -> list[Call] | Pending:
            found = [c for c in self.calls(method) if (c.done or not finished) and ok in (None, c.ok)]
            if len(found) >= count:
                return found
            return Pending(f"{len(found)} matching {method} call(s); latest calls: {summarize(self.calls()[-5:])}")

        outcome = "" if ok is None else f" with ok={ok}"
        return self.wait(f"{count}{' finished' if finished else ''} {method} call(s){outcome}", probe, timeout)

    def registrations(self) -> list[Registration]:
        """The kubelet's verdicts on this fake's registrations, every run, in order."""
        calls = self.calls(self.REGISTRATION_METHOD, kind=self.REGISTRATION_KIND)
        return [self._registration(c) for c in calls if c.done]

    def wait_for_registration(
        self, count: int = 1, *, ok: bool | None = True, timeout: float | None = None
    ) -> Registration:
        """Wait for the count-th registration (only successful ones with ok=True); returns it."""

        def probe() -> Registration | Pending:
            matching = [r for r in self.registrations() if ok in (None, r.ok)]
            if len(matching) >= count:
                return matching[count - 1]
            return Pending(f"{len(matching)} matching registration(s); latest: {self.registrations()[-3:]}")

        return self.wait(f"registration #{count} (ok={ok})", probe, timeout)

    @staticmethod
    def _registration(call: Call) -> Registration:
        raise NotImplementedError

    # -- waiting -------------------------------------------------------------------------------------

    def wait(self, what: str, probe: Callable[[], T | Pending | None], timeout: float | None = None) -> T:
        """wait.core.until on this fake; ends at once when the process died (nothing can change any more)."""

        def checked() -> T | Pending | None:
            try:
                result = probe()
            except Exception as exc:  # e.g. the control socket refusing: "not yet", unless the fake is gone
                result = Pending(f"{type(exc).__name__}: {exc}")
            if (result is None or isinstance(result, Pending)) and not self.is_running():
                seen = result.seen if isinstance(result, Pending) else "condition false"
                raise Abort(
                    f"{self.name} stopped while waiting for {what}; last seen: {seen}\n  {self.process.exit_note()}"
                )
            return result

        return until(
            checked,
            what=f"{what} on {self.name}",
            timeout=self.WAIT_TIMEOUT if timeout is None else timeout,
            interval=POLL_INTERVAL,
            max_interval=POLL_INTERVAL,
        )

    # -- failure reports -----------------------------------------------------------------------------

    def report(self) -> str:
        """The call log, the fake's status and the tail of its output, for a failing test's artifacts."""
        lines = []
        for c in self.calls(kind=None):
            error = f" error={c.error}" if c.error else ""
            lines.append(
                f"{c.summary()} {c.timing()} pid={c.pid} {c.kind} {c.service} socket={c.socket}"
                f" request={c.request} response={c.response}{error}"
            )
        try:
            status = str(self.status()) if self.is_running() else "(not running)"
        except ControlError as err:
            status = f"(no status: {err})"
        return "\n".join([*lines, "--- status ---", status, "--- process log tail ---", self.log_tail()])
