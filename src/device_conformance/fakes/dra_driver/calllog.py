"""The ordered call log: one JSON line per gRPC call, readable after the process was SIGKILLed."""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any


class CallLog:
    """Appends entries to a JSON-lines file; each line is flushed so a SIGKILL loses nothing written."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._seq = 0
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        # Append: a restarted driver continues the same log, entries carry the pid that wrote them.
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the process lifetime

    def record(
        self,
        method: str,
        request: dict[str, Any],
        *,
        start: float,
        response: dict[str, Any] | None = None,
        error: dict[str, str] | None = None,
        ok: bool | None = None,
        end: float | None = None,
    ) -> dict[str, Any]:
        with self._lock:
            self._seq += 1
            entry = {
                "seq": self._seq,
                "pid": os.getpid(),
                "method": method,
                "request": request,
                "response": response,
                "error": error,
                "ok": (error is None) if ok is None else ok,
                "start": start,
                "end": time.time() if end is None else end,
            }
            if not self._file.closed:  # a cancelled handler may finish after shutdown closed the log
                self._file.write(json.dumps(entry, sort_keys=True) + "\n")
                self._file.flush()
            return entry

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_calls(path: str) -> list[dict[str, Any]]:
    """All complete entries in file order; a torn last line (killed mid-write) is skipped."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return []
    entries = []
    for line in lines:
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return entries
