"""The node agent's wire protocol (agent.go) from the test host: one TLS connection per request, the agent's
certificate pinned (the session made it), a per-session token.

`AgentClient.run` runs a command on the node; `SocketForwarder` makes a node's Unix socket (the kubelet's
podresources, the runtime's CRI) a local Unix socket that gRPC clients dial as they would on the node.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import socket
import ssl
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from device_conformance.core.errors import CommandError, ConformanceError

CONNECT_TIMEOUT = 10
MAX_REPLY = 256 * 1024 * 1024


class AgentError(ConformanceError):
    """The agent could not be reached or refused the request (not a command's own non-zero exit)."""


def tls_context(cert_pem: bytes) -> ssl.SSLContext:
    """A client context trusting exactly the agent's self-signed certificate (pinned; no host name: the
    agent listens on a node IP and the certificate is this session's own)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=cert_pem.decode())
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


class AgentClient:
    """One node's agent at host:port."""

    def __init__(self, node: str, host: str, port: int, token: str, cert_pem: bytes) -> None:
        self.node, self.host, self.port, self.token = node, host, port, token
        self.context = tls_context(cert_pem)

    def __str__(self) -> str:
        return f"node agent on {self.node} ({self.host}:{self.port})"

    def request_line(self, op: str, **fields: object) -> bytes:
        return json.dumps({"token": self.token, "op": op, **fields}).encode() + b"\n"

    def connect(self, timeout: float | None = CONNECT_TIMEOUT) -> ssl.SSLSocket:
        try:
            raw = socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT)
        except OSError as exc:
            raise AgentError(f"cannot reach the {self}: {exc}") from None
        try:
            tls = self.context.wrap_socket(raw)
        except (OSError, ssl.SSLError) as exc:
            raw.close()
            raise AgentError(f"TLS with the {self} failed: {exc}") from None
        tls.settimeout(timeout)
        return tls

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        check: bool = True,
        timeout: float = 120,
        in_node: bool = True,
    ) -> bytes:
        """argv on the node (in_node: the node's namespaces; else in the agent's container, which shares
        the node's network and pid namespaces); its stdout. A non-zero exit raises CommandError when
        `check`."""
        line = self.request_line(
            "run",
            argv=list(argv),
            stdin=base64.b64encode(stdin or b"").decode(),
            in_node=in_node,
            timeout=timeout,
        )
        with self.connect(timeout=timeout + CONNECT_TIMEOUT) as conn:
            conn.sendall(line)
            reply = _read_line(conn, str(self))
        answer = json.loads(reply)
        stdout = base64.b64decode(answer.get("stdout") or "")
        stderr = base64.b64decode(answer.get("stderr") or "")
        if answer.get("error"):
            raise AgentError(f"{self}: {' '.join(argv)}: {answer['error']}")
        if check and answer["rc"] != 0:
            raise CommandError([f"{self.node}:", *argv], answer["rc"], (stdout + stderr).decode(errors="replace"))
        return stdout


def _read_line(conn: ssl.SSLSocket, what: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = conn.recv(1 << 16)
        except (OSError, ssl.SSLError) as exc:
            raise AgentError(f"{what}: the connection failed: {exc}") from None
        if not chunk:
            raise AgentError(f"{what} closed the connection without an answer")
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)
        if size > MAX_REPLY:
            raise AgentError(f"{what}: answer larger than {MAX_REPLY} bytes")


class SocketForwarder:
    """Local Unix sockets, each forwarding every connection to one Unix socket on the node through the agent
    (the "unix" request), served by an asyncio loop in a daemon thread. close() removes them all."""

    def __init__(self, client: AgentClient) -> None:
        self.client = client
        self.directory = Path(tempfile.mkdtemp(prefix="dc-agent-fwd-"))
        self._sockets: dict[str, Path] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"forward-{client.node}", daemon=True)
        self._thread.start()
        self._lock = threading.Lock()

    def local(self, node_socket: str) -> Path:
        """The local socket forwarding to `node_socket` (started on first use)."""
        with self._lock:
            if node_socket not in self._sockets:
                path = self.directory / f"{len(self._sockets)}.sock"
                future = asyncio.run_coroutine_threadsafe(self._serve(path, node_socket), self._loop)
                self._servers.append(future.result(timeout=30))
                self._sockets[node_socket] = path
            return self._sockets[node_socket]

    async def _serve(self, path: Path, node_socket: str) -> asyncio.AbstractServer:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await self._bridge(reader, writer, node_socket)

        return await asyncio.start_unix_server(handle, path=str(path))

    async def _bridge(self, local_r: asyncio.StreamReader, local_w: asyncio.StreamWriter, node_socket: str) -> None:
        try:
            remote_r, remote_w = await asyncio.wait_for(
                asyncio.open_connection(self.client.host, self.client.port, ssl=self.client.context),
                CONNECT_TIMEOUT,
            )
        except (OSError, ssl.SSLError, TimeoutError):
            local_w.close()
            return
        try:
            remote_w.write(self.client.request_line("unix", path=node_socket))
            await remote_w.drain()
            answer = json.loads(await remote_r.readline() or b'{"error": "no answer"}')
            if answer.get("error"):
                return
            await asyncio.gather(_copy(local_r, remote_w), _copy(remote_r, local_w))
        except (OSError, ssl.SSLError, ValueError):
            pass
        finally:
            for writer in (local_w, remote_w):
                with contextlib.suppress(Exception):
                    writer.close()

    def close(self) -> None:
        async def stop() -> None:
            for server in self._servers:
                server.close()
                await server.wait_closed()

        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(stop(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        for path in self._sockets.values():
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.directory.rmdir()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(1 << 16):
            writer.write(chunk)
            await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            if writer.can_write_eof():
                writer.write_eof()
            else:
                writer.close()
