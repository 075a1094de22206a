"""The control channel: one JSON request line per Unix-socket connection, one JSON reply line.

Request  {"op": "<name>", "args": {...}}
Reply    {"ok": true, "result": ...}  or  {"ok": false, "error": "..."}
A connection per request keeps both sides trivial and survives the driver being killed mid-call.
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
from typing import TYPE_CHECKING, Any

from device_conformance.errors import ConformanceError

if TYPE_CHECKING:  # the client side (handle) must not load the gRPC server code
    from device_conformance.fakes.dra_driver.driver import Driver

OPS = (
    "ping",
    "status",
    "fail",
    "clear_failures",
    "block",
    "unblock",
    "blocked_calls",
    "start_registrar",
    "stop_registrar",
    "start_dra_service",
    "stop_dra_service",
    "push_health",
    "set_devices",
    "set_taints",
    "devices",
    "publish_slices",
    "push_allocation",
    "remove_allocation",
    "prepared",
)


class ControlError(ConformanceError):
    """The driver refused or failed a control request; the message is the driver's."""


def dispatch(driver: Driver, request: dict[str, Any]) -> dict[str, Any]:
    op = request.get("op")
    if op not in OPS:
        return {"ok": False, "error": f"unknown op {op!r}; known: {', '.join(OPS)}"}
    try:
        return {"ok": True, "result": getattr(driver, op)(**(request.get("args") or {}))}
    except Exception as exc:
        return {"ok": False, "error": f"{op}: {exc}"}


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        try:
            request = json.loads(self.rfile.readline())
        except json.JSONDecodeError as exc:
            reply: dict[str, Any] = {"ok": False, "error": f"bad request: {exc}"}
        else:
            reply = dispatch(self.server.driver, request)  # type: ignore[attr-defined]
        self.wfile.write((json.dumps(reply) + "\n").encode())


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True  # a blocked client must not keep the process alive at exit


class ControlServer:
    def __init__(self, driver: Driver, path: str) -> None:
        self._path = path
        if os.path.exists(path):
            os.unlink(path)
        self._server = _Server(path, _Handler)
        self._server.driver = driver  # type: ignore[attr-defined]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="control", daemon=True
        )  # short poll: shutdown() waits one interval

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        try:
            os.unlink(self._path)
        except FileNotFoundError:
            pass


def call(path: str, op: str, *, timeout: float = 10.0, **args: Any) -> Any:
    """Send one control request; raise ControlError when the driver says no, OSError when it is gone."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(path)
        sock.sendall((json.dumps({"op": op, "args": args}) + "\n").encode())
        with sock.makefile("rb") as reader:
            line = reader.readline()
    if not line:
        raise ControlError(f"fake DRA driver closed the control connection during {op!r}")
    reply = json.loads(line)
    if not reply.get("ok"):
        raise ControlError(f"fake DRA driver: {reply.get('error')}")
    return reply.get("result")
