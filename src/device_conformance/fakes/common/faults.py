"""Injected faults, one model for every fake: what a method does instead of, or before, its normal answer.

A Fault names a method and an action:
  error        end the call with a gRPC status (code, message)
  claim_error  answer, but with `message` as the error of each matching claim (DRA's per-claim errors)
  block        hold the call until unblocked or cleared (or until the caller goes away)
  delay        hold the call for `seconds`, then answer normally
  crash        SIGKILL the fake's own process in the middle of the call (the call log shows it in flight)
  panic        die in the middle of the call as a Go binary's unrecovered panic does: "panic: <message>" on stderr,
               exit status 2 (fakes/common/panic.py)
  drop         answer, but leave out of the answer what `target` names, in the fake's own terms (the CRI
               proxy: "container=NAME" or "pod=NAMESPACE/NAME" leaves those containers out of ListContainers)
Selectors: claim_uid (only calls naming that claim), times (only the next N matching calls; a block has
no count, it holds until released). When several faults match a call, the latest one added goes first.

Outgoing methods are calls the fake makes rather than answers (the device plugin's Register): only crash and panic
apply to them, before the call is sent.

Standing faults are a fake's defects that are faults from the start (fakes/common/defects.py): preloaded from the
config when the fake starts, applied by admit() exactly as a test's fault of the same action, but part of the fake
rather than of a test: clear() and unblock() leave them, and they apply to every matching call. They rank below
every fault a test adds, as the oldest entries of the table.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from device_conformance.fakes.common.panic import go_panic

if TYPE_CHECKING:
    import grpc

ERROR = "error"
CLAIM_ERROR = "claim_error"
BLOCK = "block"
DELAY = "delay"
CRASH = "crash"
DROP = "drop"
PANIC = "panic"
ACTIONS = (ERROR, CLAIM_ERROR, BLOCK, DELAY, CRASH, DROP, PANIC)
# What a fault of an outgoing call may do: the fake dies before it sends the call.
OUTGOING_ACTIONS = (CRASH, PANIC)

# How often a held call looks whether its caller went away (the kubelet's deadline, a stopped server).
HOLD_POLL = 0.05


def status_code(code: str | grpc.StatusCode) -> str:
    """The gRPC status code's name; accepts "INTERNAL", "internal" or grpc.StatusCode.INTERNAL."""
    # Imported here, not above: the defect registries import this module for Fault, and the fakes' configs import
    # them; a config read by a suite or the certifier needs no gRPC (about 80 ms). A fake has it loaded already.
    import grpc

    if isinstance(code, grpc.StatusCode):
        return code.name
    if code.upper() not in grpc.StatusCode.__members__:
        raise ValueError(f"unknown gRPC status code {code!r}; use one of {list(grpc.StatusCode.__members__)}")
    return code.upper()


@dataclass(frozen=True)
class Status:
    """A gRPC status a fake ends a call (or a stream) with."""

    code: str
    message: str


@dataclass
class Fault:
    method: str
    action: str = ERROR
    code: str = "UNKNOWN"  # error: the gRPC status code name
    message: str = ""  # error, claim_error; panic: the panic's value and trace
    seconds: float = 0.0  # delay
    claim_uid: str | None = None  # None = any call of the method
    times: int | None = None  # None = until cleared
    target: str = ""  # drop: what to leave out of the answer, in the fake's own terms

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fault:
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown fault field(s) {unknown}; a fault has {list(cls.__dataclass_fields__)}")
        return cls(**data)

    def matches(self, method: str, claim_uids: Iterable[str]) -> bool:
        return self.method == method and (self.claim_uid is None or self.claim_uid in claim_uids)


@dataclass(frozen=True)
class BlockedCall:
    """A call a block fault holds right now."""

    method: str
    claims: list[str]
    since: float  # epoch seconds


@dataclass
class Verdict:
    """What a call does after admit(): end (cancelled, or with `error`), or answer with these claim errors,
    leaving out of the answer what the `drops` targets name."""

    cancelled: bool = False
    error: Status | None = None
    claim_errors: dict[str, str] = field(default_factory=dict)
    drops: list[str] = field(default_factory=list)


class Faults:
    """The fault table of one fake process, consulted by every handler before it does any work."""

    def __init__(
        self,
        methods: Sequence[str],
        *,
        api: str,
        claim_methods: Sequence[str] = (),
        drop_methods: Sequence[str] = (),
        check_target: Callable[[str], object] | None = None,
        outgoing_methods: Sequence[str] = (),
    ) -> None:
        """methods: the ones a fault may name; claim_methods: those whose requests name claims (DRA);
        drop_methods: those whose answers a drop fault may thin, its target checked by check_target (which
        raises ValueError naming the right form); outgoing_methods: calls the fake makes (among methods)."""
        self._methods, self._api, self._claim_methods = tuple(methods), api, tuple(claim_methods)
        self._drop_methods, self._check_target = tuple(drop_methods), check_target
        self._outgoing_methods = tuple(outgoing_methods)
        self._cond = threading.Condition()
        self._faults: list[Fault] = []
        self._standing: list[tuple[str, Fault]] = []  # (defect name, fault), in the order preloaded
        self._blocked: dict[int, BlockedCall] = {}
        self._next_id = 0

    def add(self, fault: Fault) -> None:
        self._check(fault)
        with self._cond:
            self._faults.append(fault)

    def preload(self, defect: str, fault: Fault) -> None:
        """Add a standing fault, the defect `defect` of the fake (see the module docstring)."""
        self._check(fault)
        if fault.action == BLOCK or fault.times is not None:
            raise ValueError(f"defect {defect!r}: a standing fault applies to every call; it cannot hold or count")
        with self._cond:
            self._standing.append((defect, fault))

    def clear(self, method: str | None = None) -> None:
        """Drop every fault (of one method) but the standing ones; calls held by a block go on."""
        with self._cond:
            self._faults = [f for f in self._faults if method is not None and f.method != method]
            self._cond.notify_all()

    def unblock(self, method: str | None = None, claim_uid: str | None = None) -> None:
        with self._cond:
            self._faults = [
                f
                for f in self._faults
                if not (f.action == BLOCK and method in (None, f.method) and claim_uid in (None, f.claim_uid))
            ]
            self._cond.notify_all()

    def admit(self, method: str, claim_uids: Sequence[str] = (), *, is_active: Callable[[], bool]) -> Verdict:
        """Apply the faults matching this call, in order block, delay, crash, panic, error, claim_error and drop."""
        uids = list(claim_uids)
        if not self._hold_while_blocked(method, uids, is_active):
            return Verdict(cancelled=True)
        delay = self._take(method, uids, DELAY)
        if delay is not None and not self._sleep(delay.seconds, is_active):
            return Verdict(cancelled=True)
        if self._take(method, uids, CRASH) is not None:
            os.kill(os.getpid(), signal.SIGKILL)  # a vendor binary crashing mid-call: no cleanup at all
        panic = self._take(method, uids, PANIC)
        if panic is not None:
            go_panic(panic.message)
        error = self._take(method, uids, ERROR)
        if error is not None:
            return Verdict(error=Status(error.code, error.message))
        return Verdict(claim_errors=self._claim_errors(method, uids), drops=self._drops(method, uids))

    def blocked_calls(self) -> list[dict[str, Any]]:
        with self._cond:
            return [asdict(b) for b in self._blocked.values()]

    def ops(self) -> dict[str, Callable[..., Any]]:
        """The control-channel operations on this table, the same for every fake."""
        return {
            "add_fault": lambda fault: self.add(Fault.from_dict(fault)),
            "clear_faults": self.clear,
            "unblock": self.unblock,
            "blocked_calls": self.blocked_calls,
        }

    def describe(self) -> dict[str, Any]:
        """The faults tests added and the calls held; "standing" (each with its defect) only when the fake has any."""
        with self._cond:
            described: dict[str, Any] = {
                "faults": [asdict(f) for f in self._faults],
                "blocked_calls": self.blocked_calls(),
            }
            if self._standing:
                described["standing"] = [{"defect": name, **asdict(f)} for name, f in self._standing]
            return described

    # -- plumbing ------------------------------------------------------------------------------------

    def _check(self, fault: Fault) -> None:
        if fault.method not in self._methods:
            raise ValueError(f"unknown {self._api} method {fault.method!r}; use one of {list(self._methods)}")
        if fault.action not in ACTIONS:
            raise ValueError(f"unknown fault action {fault.action!r}; use one of {list(ACTIONS)}")
        if fault.method in self._outgoing_methods and fault.action not in OUTGOING_ACTIONS:
            actions = list(OUTGOING_ACTIONS)
            raise ValueError(f"{fault.method} is a call the fake makes: only {actions} apply, before it is sent")
        if fault.action == CLAIM_ERROR and fault.method not in self._claim_methods:
            raise ValueError(f"{fault.method} has no per-claim errors; give a gRPC code")
        if fault.action == BLOCK and fault.times is not None:
            raise ValueError("a block holds every matching call until unblocked; it takes no times")
        if fault.times is not None and (isinstance(fault.times, bool) or not isinstance(fault.times, int)):
            raise ValueError(f"times={fault.times!r}: give a whole number of calls, or None for until cleared")
        if fault.times is not None and fault.times < 1:
            raise ValueError(f"times={fault.times}: a fault applies to at least 1 call; give None for until cleared")
        if fault.action == DELAY and fault.seconds < 0:
            raise ValueError(f"a delay of {fault.seconds!r} seconds: give seconds >= 0")
        if fault.action == DROP:
            if fault.method not in self._drop_methods:
                drops = list(self._drop_methods)
                raise ValueError(f"{fault.method} answers have nothing to drop; drops apply to {drops}")
            if self._check_target is not None:
                self._check_target(fault.target)
        elif fault.target:
            raise ValueError(f"target={fault.target!r} is for action {DROP!r} only; leave it out for {fault.action!r}")
        fault.code = status_code(fault.code)

    def _matching(self, method: str, uids: list[str], action: str) -> list[Fault]:
        """Newest first, the standing ones last (they were there first); call with the lock held."""
        table = [*reversed(self._faults), *(f for _, f in reversed(self._standing))]
        return [f for f in table if f.action == action and f.matches(method, uids)]

    def _use(self, fault: Fault) -> None:
        if fault.times is not None:  # never a standing one: preload() refuses a count
            fault.times -= 1
            if fault.times <= 0:
                self._faults.remove(fault)

    def _take(self, method: str, uids: list[str], action: str) -> Fault | None:
        with self._cond:
            found = next(iter(self._matching(method, uids, action)), None)
            if found is not None:
                self._use(found)
            return found

    def _claim_errors(self, method: str, uids: list[str]) -> dict[str, str]:
        errors: dict[str, str] = {}
        with self._cond:
            for fault in self._matching(method, uids, CLAIM_ERROR):
                hit = [u for u in uids if fault.claim_uid in (None, u) and u not in errors]
                errors.update(dict.fromkeys(hit, fault.message))
                if hit:
                    self._use(fault)
        return errors

    def _drops(self, method: str, uids: list[str]) -> list[str]:
        """The targets of every matching drop fault, newest first; each counts one use."""
        with self._cond:
            found = self._matching(method, uids, DROP)
            for fault in found:
                self._use(fault)
            return [f.target for f in found]

    def _hold_while_blocked(self, method: str, uids: list[str], is_active: Callable[[], bool]) -> bool:
        """False when the caller went away while the call was held."""
        with self._cond:
            if not self._matching(method, uids, BLOCK):
                return True
            self._next_id += 1
            call_id = self._next_id
            self._blocked[call_id] = BlockedCall(method, uids, time.time())
            try:
                while self._matching(method, uids, BLOCK):
                    if not is_active():
                        return False
                    self._cond.wait(HOLD_POLL)
                return True
            finally:
                del self._blocked[call_id]

    @staticmethod
    def _sleep(seconds: float, is_active: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if not is_active():
                return False
            time.sleep(min(HOLD_POLL, max(deadline - time.monotonic(), 0)))
        return True
