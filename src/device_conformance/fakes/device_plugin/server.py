"""One gRPC server serving v1beta1.DevicePlugin on one Unix socket.

A grpc.Server cannot be restarted once stopped, so "start serving again" builds a new one.
"""

from __future__ import annotations

import os
from concurrent import futures

import grpc

from device_conformance.fakes.common.sockets import remove_socket
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2_grpc as pb_grpc

FileIdentity = tuple[int, int, int]  # (st_dev, st_ino, st_ctime_ns)


def file_identity(path: str) -> FileIdentity | None:
    """Identity of the file at path, or None. ctime is included because inode numbers are reused."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


class PluginServer:
    def __init__(self, path: str, servicer: pb_grpc.DevicePluginServicer) -> None:
        self.path = path
        self._servicer = servicer
        self._server: grpc.Server | None = None
        self._identity: FileIdentity | None = None

    @property
    def serving(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        if self._server is not None:
            return
        remove_socket(self.path)  # a stale socket from a killed predecessor would make bind fail
        # Streams and blocked calls each hold a worker thread, so leave plenty.
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=32, thread_name_prefix="device-plugin"))
        pb_grpc.add_DevicePluginServicer_to_server(self._servicer, server)
        server.add_insecure_port(f"unix://{self.path}")
        server.start()
        self._server, self._identity = server, file_identity(self.path)

    def stop(self, grace: float = 0) -> None:
        """Stop serving (open streams are cancelled) and remove our socket if it is still ours."""
        server, self._server = self._server, None
        if server is None:
            return
        server.stop(grace).wait()
        if file_identity(self.path) == self._identity:
            remove_socket(self.path)
        self._identity = None

    def socket_intact(self) -> bool:
        """False once someone (the kubelet at start) deleted or replaced our socket file."""
        return self._server is None or file_identity(self.path) == self._identity
