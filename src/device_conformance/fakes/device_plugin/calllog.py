"""The ordered record of every RPC the plugin served and every Register it made.

Each record is written to the JSON-lines file when the call starts and again when it ends (same
seq, the later line wins), so the file is readable after a SIGKILL and shows calls still in flight.
Times: `*_mono` is CLOCK_MONOTONIC, which on Linux is shared by all processes of the host, so a test
can compare them with its own time.monotonic(); `*_wall` is epoch seconds for humans.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TextIO

RPC = "rpc"  # the kubelet called us
REGISTER = "register"  # we called the kubelet's Register
STREAM_SEND = "stream_send"  # one ListAndWatch response we sent


@dataclass
class CallRecord:
    seq: int
    method: str
    kind: str = RPC
    socket: str = ""
    pid: int = 0
    request: dict[str, Any] = field(default_factory=dict)
    response: dict[str, Any] | None = None
    # {"code": "INTERNAL", "message": "..."} when the call failed.
    error: dict[str, str] | None = None
    done: bool = False
    started_mono: float = 0.0
    started_wall: float = 0.0
    ended_mono: float | None = None
    ended_wall: float | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CallRecord:
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})

    def summary(self) -> str:
        outcome = "in flight" if not self.done else (f"error {self.error['code']}" if self.error else "ok")
        return f"#{self.seq} {self.method} ({outcome})"


@dataclass
class RegistrationRecord:
    """One Register call as the plugin saw it; `error` holds the kubelet's error text."""

    seq: int
    socket_name: str
    version: str
    resource_name: str
    ok: bool
    error_code: str
    error: str
    reason: str
    started_mono: float
    ended_mono: float | None

    @classmethod
    def from_call(cls, call: CallRecord) -> RegistrationRecord:
        err = call.error or {}
        return cls(
            seq=call.seq,
            socket_name=call.request.get("endpoint", ""),
            version=call.request.get("version", ""),
            resource_name=call.request.get("resource_name", ""),
            ok=call.done and not call.error,
            error_code=err.get("code", ""),
            error=err.get("message", ""),
            reason=(call.response or {}).get("reason", ""),
            started_mono=call.started_mono,
            ended_mono=call.ended_mono,
        )


class CallLog:
    """Thread-safe, append-only. The in-memory list holds this process's calls; a file left by an
    earlier process with the same path is continued (seq goes on), not overwritten."""

    def __init__(self, path: str = "") -> None:
        self._lock = threading.Lock()
        self._records: list[CallRecord] = []
        previous = read_call_log(path) if path else []
        self._base_seq = previous[-1].seq if previous else 0
        self._file: TextIO | None = open(path, "a", buffering=1) if path else None  # noqa: SIM115

    def start(self, method: str, request: dict[str, Any], *, kind: str = RPC, socket: str = "") -> CallRecord:
        with self._lock:
            record = self._new(method, request, kind, socket)
            self._write(record)
            return record

    def finish(
        self, record: CallRecord, *, response: dict[str, Any] | None = None, error: dict[str, str] | None = None
    ) -> None:
        with self._lock:
            self._end(record, response, error)
            self._write(record)

    def event(self, method: str, response: dict[str, Any], *, kind: str, socket: str = "") -> None:
        """A record that is complete as soon as it is written (e.g. one streamed response): one line."""
        with self._lock:
            record = self._new(method, {}, kind, socket)
            self._end(record, response, None)
            self._write(record)

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [asdict(r) for r in self._records]

    def close(self) -> None:
        with self._lock:
            if self._file:
                self._file.close()
                self._file = None

    def _new(self, method: str, request: dict[str, Any], kind: str, socket: str) -> CallRecord:
        record = CallRecord(
            seq=self._base_seq + len(self._records) + 1,
            method=method,
            kind=kind,
            socket=socket,
            pid=os.getpid(),
            request=request,
            started_mono=time.monotonic(),
            started_wall=time.time(),
        )
        self._records.append(record)
        return record

    @staticmethod
    def _end(record: CallRecord, response: dict[str, Any] | None, error: dict[str, str] | None) -> None:
        record.response, record.error, record.done = response, error, True
        record.ended_mono, record.ended_wall = time.monotonic(), time.time()

    def _write(self, record: CallRecord) -> None:
        if self._file:
            self._file.write(json.dumps(asdict(record), sort_keys=True) + "\n")


def read_call_log(path: str | Path) -> list[CallRecord]:
    """Parse a call-log file, even one cut short by SIGKILL (a torn last line is skipped)."""
    by_seq: dict[int, CallRecord] = {}
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    for line in text.splitlines():
        try:
            record = CallRecord.from_dict(json.loads(line))
        except (ValueError, TypeError):
            continue
        by_seq[record.seq] = record
    return [by_seq[s] for s in sorted(by_seq)]
