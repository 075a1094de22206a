"""Notice a kubelet restart the way real plugins do, by polling the files (every ~100 ms).

A restarting kubelet deletes the sockets in its directory (ours included) and re-creates kubelet.sock.
Each tick: re-create any of our sockets that vanished, and register again when kubelet.sock got a new
identity or our registered socket had to be re-created.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from device_conformance.fakes.device_plugin.server import FileIdentity, file_identity

POLL_INTERVAL = 0.1
RETRY_INTERVAL = 0.5
MAX_RETRIES = 20


class KubeletWatcher:
    def __init__(
        self,
        kubelet_socket: str,
        repair_sockets: Callable[[], bool],
        reregister: Callable[[str], bool],
    ) -> None:
        """repair_sockets() re-creates vanished sockets, True if the registered one was among them.
        reregister(reason) registers if allowed; False asks for a retry (kubelet not answering yet)."""
        self._kubelet_socket = kubelet_socket
        self._repair_sockets, self._reregister = repair_sockets, reregister
        self._last: FileIdentity | None = file_identity(kubelet_socket)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kubelet-watcher", daemon=True)
        self._owed: str | None = None  # reason of a registration still to be made
        self._retries = 0
        self._next_try = 0.0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(POLL_INTERVAL):
            self.tick()

    def tick(self) -> None:
        if self._repair_sockets():
            self.owe("plugin socket deleted")
        current = file_identity(self._kubelet_socket)
        if current != self._last:
            self._last = current
            if current is not None:
                self.owe("kubelet.sock re-created")
        if self._owed and current is not None and time.monotonic() >= self._next_try:
            if self._reregister(self._owed) or self._retries >= MAX_RETRIES:
                self._owed = None
            else:
                self._retries += 1
                self._next_try = time.monotonic() + RETRY_INTERVAL

    def owe(self, reason: str) -> None:
        """Make a registration on the next tick at which kubelet.sock exists."""
        self._owed, self._retries, self._next_try = reason, 0, 0.0
