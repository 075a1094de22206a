"""The control channel: one JSON request line in, one JSON answer line out, per connection.

Request  {"op": "set_health", "args": {"device_id": "dev-1", "healthy": false}}
Answer   {"ok": true, "result": ...}   or   {"ok": false, "error": "ValueError: ..."}
Plain JSON over a Unix socket keeps the channel usable from a shell (socat) while debugging.
"""

from __future__ import annotations

import json
import socketserver
import threading
import traceback
from collections.abc import Callable
from typing import Any

from device_conformance.fakes.device_plugin.server import remove_socket

Ops = dict[str, Callable[..., Any]]


class _Handler(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        line = self.rfile.readline()
        if not line:
            return
        try:
            request = json.loads(line)
            op = self.server.ops.get(request.get("op", ""))
            if op is None:
                raise ValueError(f"unknown op {request.get('op')!r}; known: {sorted(self.server.ops)}")
            answer = {"ok": True, "result": op(**request.get("args", {}))}
        except Exception as err:  # every failure goes back to the caller, the plugin keeps running
            answer = {"ok": False, "error": f"{type(err).__name__}: {err}", "trace": traceback.format_exc()}
        self.wfile.write(json.dumps(answer, default=str).encode() + b"\n")


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, ops: Ops) -> None:
        self.ops = ops
        super().__init__(path, _Handler)


class ControlServer:
    def __init__(self, path: str, ops: Ops) -> None:
        self.path = path
        remove_socket(path)
        self._server = _Server(path, ops)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), name="control", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        remove_socket(self.path)
