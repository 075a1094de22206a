"""The control channel between the test process and a fake process: one JSON request line in, one JSON
answer line out, one Unix-socket connection per request.

Request  {"op": "set_health", "args": {"device_id": "dev-1", "healthy": false}}
Answer   {"ok": true, "result": ...}   or   {"ok": false, "error": "set_health: KeyError: ...", "trace": "..."}
A connection per request keeps both sides trivial and survives the fake being killed mid-call; plain JSON
keeps the channel usable from a shell (socat) while debugging.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from device_conformance.core.errors import ConformanceError
from device_conformance.fakes.common.sockets import remove_socket

Ops = Mapping[str, Callable[..., Any]]


class ControlError(ConformanceError):
    """The control channel failed, or the fake refused the operation (the message is the fake's)."""


def answer(ops: Ops, line: bytes) -> dict[str, Any]:
    """Run one request against the fake's operations; every failure goes back to the caller."""
    op = "?"
    try:
        request = json.loads(line)
        op = request.get("op", "")
        if op not in ops:
            raise ValueError(f"unknown op {op!r}; known: {sorted(ops)}")
        return {"ok": True, "result": ops[op](**(request.get("args") or {}))}
    except Exception as err:  # the fake keeps running; the test gets the reason
        return {"ok": False, "error": f"{op}: {type(err).__name__}: {err}", "trace": traceback.format_exc()}


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        line = self.rfile.readline()
        if line:
            self.wfile.write(json.dumps(answer(self.server.ops, line), default=str).encode() + b"\n")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True  # a blocked client must not keep the process alive at exit

    def __init__(self, path: str, ops: Ops) -> None:
        self.ops = ops
        super().__init__(path, _Handler)


class ControlServer:
    """Runs in the fake process; `ops` maps operation names to functions of JSON values."""

    def __init__(self, path: str, ops: Ops) -> None:
        self.path = path
        remove_socket(path)  # left by a SIGKILLed predecessor
        self._server = _Server(path, ops)
        # Short poll interval: shutdown() waits up to one.
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        remove_socket(self.path)


class ControlClient:
    """Runs in the test process. A failed connection and a refused operation both raise ControlError."""

    def __init__(self, path: str, *, timeout: float) -> None:
        self.path, self.timeout = path, timeout

    def call(self, op: str, args: Mapping[str, Any] | None = None, *, timeout: float | None = None) -> Any:
        args = dict(args or {})
        request = json.dumps({"op": op, "args": args}).encode() + b"\n"
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(self.timeout if timeout is None else timeout)
                sock.connect(self.path)
                sock.sendall(request)
                with sock.makefile("rb") as reader:
                    line = reader.readline()
        except OSError as err:
            raise ControlError(f"control socket {self.path} failed on {op!r}: {err}") from err
        if not line:
            raise ControlError(f"control socket {self.path} closed without answering {op!r}")
        reply = json.loads(line)
        if not reply["ok"]:
            raise ControlError(f"{op}({args}) refused: {reply['error']}")
        return reply["result"]
