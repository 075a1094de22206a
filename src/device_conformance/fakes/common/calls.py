"""The call log of a fake: one typed record per RPC, written by the fake process, read by the test process.

Each record is written as a JSON line when the call starts and again when it ends (same seq, the later
line wins), so the file is readable after a SIGKILL and shows calls still in flight. A fake started again
on the same file continues it: seq goes on and every record carries the pid that wrote it.
Times: `*_mono` is CLOCK_MONOTONIC, which on Linux is shared by all processes of the host, so a test can
compare them with its own time.monotonic(); `*_wall` is epoch seconds for humans.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

RPC = "rpc"  # the kubelet called the fake
REGISTER = "register"  # the fake called the kubelet (a device plugin's Register)
STREAM_SEND = "stream_send"  # one message the fake sent on an open stream


@dataclass
class Call:
    """One RPC as the fake saw it. `method` is the bare name ("Allocate", "NodePrepareResources"),
    `service` the full gRPC service name (which API version the kubelet picked)."""

    seq: int
    method: str
    service: str = ""
    kind: str = RPC
    socket: str = ""  # the file name of the socket the call came in on (or went out to)
    pid: int = 0
    request: dict[str, Any] = field(default_factory=dict)
    response: dict[str, Any] | None = None
    error: dict[str, str] | None = None  # the gRPC status of a failed call: {"code": "INTERNAL", "message": ...}
    done: bool = False
    # Finished without a gRPC error and without a per-claim error in the response (DRA).
    ok: bool = False
    started_mono: float = 0.0
    started_wall: float = 0.0
    ended_mono: float | None = None
    ended_wall: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Call:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    @property
    def claim_uids(self) -> list[str]:
        """The claims a DRA call named, in request order (empty for other calls)."""
        return [claim["uid"] for claim in self.request.get("claims") or []]

    def outcome(self) -> str:
        if not self.done:
            return "in flight"
        if self.error:
            return f"error {self.error['code']}"
        return "ok" if self.ok else "claim error"

    def summary(self) -> str:
        return f"#{self.seq} {self.method} ({self.outcome()})"

    def timing(self) -> str:
        """`at 18:23:39.202 UTC, 0.004 s` (or `in flight`): to line a call up with the kubelet's log, which
        stamps its lines in UTC on our nodes."""
        at = time.strftime("%H:%M:%S", time.gmtime(self.started_wall)) + f".{int(self.started_wall * 1000) % 1000:03d}"
        took = "in flight" if self.ended_mono is None else f"{self.ended_mono - self.started_mono:.3f} s"
        return f"at {at} UTC, {took}"


@dataclass(frozen=True)
class Registration:
    """The kubelet's verdict on one registration of a fake: a device plugin's Register call, or the
    NotifyRegistrationStatus the kubelet sent a DRA driver. `error` is the kubelet's error text."""

    seq: int
    pid: int
    ok: bool
    error: str = ""
    error_code: str = ""  # gRPC code of a failed Register (device plugins)
    started_mono: float = 0.0
    started_wall: float = 0.0
    ended_mono: float | None = None
    # Device plugins: what was registered, and why (start, kubelet.sock re-created, released, ...).
    socket_name: str = ""
    version: str = ""
    resource_name: str = ""
    reason: str = ""


def has_claim_errors(response: dict[str, Any] | None) -> bool:
    """DRA answers per-claim failures inside an OK response: claims[uid].error."""
    return any(c.get("error") for c in ((response or {}).get("claims") or {}).values())


class CallLog:
    """The writer, in the fake process. Thread-safe; every line is flushed so a SIGKILL loses nothing written."""

    def __init__(self, path: str) -> None:
        """An empty path logs nothing (a fake run by hand without a handle)."""
        self._lock = threading.Lock()
        previous = read_calls(path) if path else []
        self._seq = previous[-1].seq if previous else 0
        self._file: TextIO | None = None
        if path:
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._file = open(path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 - process lifetime

    def start(
        self, method: str, request: dict[str, Any], *, service: str = "", kind: str = RPC, socket: str = ""
    ) -> Call:
        with self._lock:
            call = self._new(method, request, service, kind, socket)
            self._write(call)
            return call

    def finish(
        self, call: Call, *, response: dict[str, Any] | None = None, error: dict[str, str] | None = None
    ) -> None:
        with self._lock:
            self._end(call, response, error)
            self._write(call)

    def event(self, method: str, response: dict[str, Any], *, service: str = "", kind: str, socket: str = "") -> None:
        """A record complete as soon as it is written (one streamed message): one line."""
        with self._lock:
            call = self._new(method, {}, service, kind, socket)
            self._end(call, response, None)
            self._write(call)

    def close(self) -> None:
        with self._lock:
            if self._file:
                self._file.close()
                self._file = None

    def _new(self, method: str, request: dict[str, Any], service: str, kind: str, socket: str) -> Call:
        self._seq += 1
        return Call(
            seq=self._seq,
            method=method,
            service=service,
            kind=kind,
            socket=socket,
            pid=os.getpid(),
            request=request,
            started_mono=time.monotonic(),
            started_wall=time.time(),
        )

    @staticmethod
    def _end(call: Call, response: dict[str, Any] | None, error: dict[str, str] | None) -> None:
        call.response, call.error, call.done = response, error, True
        call.ok = error is None and not has_claim_errors(response)
        call.ended_mono, call.ended_wall = time.monotonic(), time.time()

    def _write(self, call: Call) -> None:
        if self._file:  # a cancelled handler may finish after shutdown closed the log
            self._file.write(json.dumps(asdict(call), sort_keys=True) + "\n")


def read_calls(path: str | Path) -> list[Call]:
    """The reader, in the test process: every run's calls in seq order, even from a file cut short by
    SIGKILL (a torn last line is skipped)."""
    by_seq: dict[int, Call] = {}
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        try:
            call = Call.from_dict(json.loads(line))
        except (ValueError, TypeError):
            continue
        by_seq[call.seq] = call
    return [by_seq[s] for s in sorted(by_seq)]


def held_and_released(calls: list[Call], *, caller_deadline: float) -> str | None:
    """What is wrong, if anything, with calls a test held and then let go at once: each must have been made while
    the hold lasted (started before the release, the end of the first ok call) and ended ok at the release, or
    ended CANCELLED by the caller's own deadline after at least `caller_deadline` seconds held."""
    answered = [c for c in calls if c.done and c.ok]
    if not answered:
        return f"none was answered ok: {summarize(calls)}"
    released = min(c.ended_mono for c in answered if c.ended_mono is not None)
    for call in calls:
        held = (call.ended_mono or released) - call.started_mono
        if call.started_mono > released:
            return f"#{call.seq} started {call.started_mono - released:.3f} s after the release: {summarize(calls)}"
        if not call.ok and not (call.outcome() == "error CANCELLED" and held >= caller_deadline):
            return f"#{call.seq} ended {call.outcome()} after {held:.3f} s held: {summarize(calls)}"
    return None


def summarize(calls: list[Call]) -> str:
    """`#3 GetInfo (error UNAVAILABLE), #4 NodePrepareResources (ok)` for wait messages."""
    return ", ".join(c.summary() for c in calls) or "no calls at all"


def claim_record(calls: list[Call]) -> list[tuple[list[str], str]]:
    """(claim UIDs, outcome) of each DRA claim call in order, e.g. [(["uid-1"], "ok")]: compared whole with an
    expected list, a failing assertion shows every call that was (or was not) made."""
    return [(c.claim_uids, c.outcome()) for c in calls]
