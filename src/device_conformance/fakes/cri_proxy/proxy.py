"""The CRI proxy: a gRPC server on a Unix socket that forwards every call to the container runtime's socket as
raw bytes, whatever its service, method or cardinality, applying faults to the few calls a test alters.

Modelled on upstream's node e2e proxy (test/e2e_node/criproxy/proxy_runtime_service.go and
proxy_image_service.go), which wraps each RuntimeService and ImageService method by hand. Here one generic
handler serves them all: a method the proxy does not alter is a stream-stream call on both sides, which on the
wire is the same as a unary, server-streaming (GetContainerEvents) or client-streaming call, so a method added to
the CRI after this was written passes through too, and no message is decoded on the way. The methods faults may
name (FAULT_METHODS, all unary in k8s.io/cri-api pkg/apis/runtime/v1/api.proto) are decoded only for the call log
and for a drop, which re-serialises the ListContainers answer without the dropped containers.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Iterator, Sequence
from concurrent import futures
from typing import Any, NoReturn

import grpc

from device_conformance.fakes.common.calls import Call, CallLog
from device_conformance.fakes.common.faults import Faults, Status
from device_conformance.fakes.common.rpc import end_call
from device_conformance.fakes.common.sockets import remove_socket
from device_conformance.fakes.cri_proxy import containers
from device_conformance.fakes.cri_proxy.config import CRIProxyConfig

RUNTIME_SERVICE = "runtime.v1.RuntimeService"
IMAGE_SERVICE = "runtime.v1.ImageService"
# The calls the kubelet's container manager makes for its snapshot at start (pkg/kubelet/cm/helpers.go
# buildContainerMapAndRunningSetFromRuntime: ListPodSandbox, then ListContainers, both errors discarded), and the
# one its runtime manager makes per container for a pod's status (pkg/kubelet/kuberuntime/kuberuntime_container.go
# getPodContainerStatuses).
FAULT_METHODS = ("ListPodSandbox", "ListContainers", "ContainerStatus")
DROP_METHODS = ("ListContainers",)
# The kubelet's own limit on CRI messages (pkg/kubelet/cri/remote/utils.go maxMsgSize, 16 MiB): a listing the
# kubelet accepts must pass through the proxy too.
MAX_MESSAGE = 16 * 1024 * 1024
CHANNEL_OPTIONS = [("grpc.max_receive_message_length", MAX_MESSAGE), ("grpc.max_send_message_length", MAX_MESSAGE)]
# Headers gRPC sets itself on the forwarded call; every other header of the kubelet's call goes upstream.
_OWN_HEADERS = ("user-agent", "grpc-", ":")


def new_faults() -> Faults:
    return Faults(FAULT_METHODS, api="CRI", drop_methods=DROP_METHODS, check_target=containers.parse_target)


def forwarded_metadata(metadata: Sequence[tuple[str, Any]] | None) -> list[tuple[str, Any]]:
    return [(k, v) for k, v in metadata or () if not k.startswith(_OWN_HEADERS)]


class Forwarder(grpc.GenericRpcHandler):
    """Every method of every service: forwarded upstream, logged, and faults applied to FAULT_METHODS."""

    def __init__(self, channel: grpc.Channel, faults: Faults, log: CallLog, socket_name: str) -> None:
        self._channel, self._faults, self._log, self._socket = channel, faults, log, socket_name

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        full = handler_call_details.method  # "/runtime.v1.RuntimeService/ListContainers"
        service, _, method = full.lstrip("/").rpartition("/")
        if service == RUNTIME_SERVICE and method in FAULT_METHODS:

            def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
                return self._altered(full, service, method, request, context)

            return grpc.unary_unary_rpc_method_handler(unary)

        def stream(requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
            return self._passed(full, service, method, requests, context)

        return grpc.stream_stream_rpc_method_handler(stream)

    # -- calls passed through as they are -------------------------------------------------------------

    def _passed(
        self, full: str, service: str, method: str, requests: Iterator[bytes], context: grpc.ServicerContext
    ) -> Iterator[bytes]:
        call = self._log.start(method, {}, service=service, socket=self._socket)
        upstream = self._channel.stream_stream(full)(
            requests, timeout=context.time_remaining(), metadata=forwarded_metadata(context.invocation_metadata())
        )
        context.add_callback(upstream.cancel)  # the kubelet went away: so does the runtime's call
        sent = 0
        try:
            for answer in upstream:
                sent += 1
                yield answer
        except grpc.RpcError as err:
            self._failed_upstream(call, context, err)
        context.set_trailing_metadata(upstream.trailing_metadata() or ())
        self._log.finish(call, response={"messages": sent})

    # -- calls faults may alter -----------------------------------------------------------------------

    def _altered(self, full: str, service: str, method: str, request: bytes, context: grpc.ServicerContext) -> bytes:
        call = self._log.start(
            method, self._decoded(containers.request_record, method, request), service=service, socket=self._socket
        )
        verdict = self._faults.admit(method, is_active=context.is_active)
        if verdict.cancelled:
            end_call(self._log, call, context, Status("CANCELLED", "the caller went away while the test held the call"))
        if verdict.error is not None:
            end_call(self._log, call, context, verdict.error)
        try:
            answer, upstream = self._channel.unary_unary(full).with_call(
                request, timeout=context.time_remaining(), metadata=forwarded_metadata(context.invocation_metadata())
            )
        except grpc.RpcError as err:
            self._failed_upstream(call, context, err)
        dropped: list[dict[str, str]] = []
        if verdict.drops:
            try:
                answer, dropped = containers.drop_containers(answer, verdict.drops)
            except Exception as exc:  # a bug in the proxy must show in the call log, not only as INTERNAL
                traceback.print_exc(file=sys.stderr)
                end_call(self._log, call, context, Status("INTERNAL", f"bug in the CRI proxy: {exc!r}"))
        context.set_trailing_metadata(upstream.trailing_metadata() or ())
        record = self._decoded(containers.response_record, method, answer)
        self._log.finish(call, response={**record, "dropped": dropped} if verdict.drops else record)
        return answer

    @staticmethod
    def _decoded(decode: Any, method: str, data: bytes) -> dict[str, Any]:
        """The call log's record of a message; a message our subset cannot parse is logged by size, and passed on."""
        try:
            return decode(method, data)
        except Exception as exc:
            return {"size": len(data), "undecoded": f"{type(exc).__name__}: {exc}"}

    def _failed_upstream(self, call: Call, context: grpc.ServicerContext, err: grpc.RpcError) -> NoReturn:
        """End the kubelet's call with the runtime's own status (or the channel's, when the runtime is gone)."""
        code = err.code() if isinstance(err, grpc.Call) else grpc.StatusCode.UNKNOWN
        details = (err.details() if isinstance(err, grpc.Call) else str(err)) or ""
        if isinstance(err, grpc.Call):
            context.set_trailing_metadata(err.trailing_metadata() or ())
        end_call(self._log, call, context, Status(code.name, details))


class CRIProxy:
    """The server and its upstream channel; start() serves, stop() closes both and removes the socket."""

    def __init__(self, config: CRIProxyConfig) -> None:
        self.config = config
        self.faults = new_faults()
        self.log = CallLog(config.call_log)
        self._channel = grpc.insecure_channel(f"unix://{config.upstream}", options=CHANNEL_OPTIONS)
        # Each call in flight holds a worker (a held or delayed one for as long as the test holds it, a
        # GetContainerEvents stream for as long as the kubelet keeps it open).
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="cri-proxy"), options=CHANNEL_OPTIONS
        )
        socket_name = os.path.basename(config.socket)
        self._server.add_generic_rpc_handlers((Forwarder(self._channel, self.faults, self.log, socket_name),))

    def start(self) -> None:
        remove_socket(self.config.socket)  # left by a SIGKILLed predecessor
        self._server.add_insecure_port(f"unix://{self.config.socket}")
        self._server.start()

    def stop(self) -> None:
        self._server.stop(0).wait()
        self._channel.close()
        remove_socket(self.config.socket)
        self.log.close()

    def ops(self) -> dict[str, Any]:
        return {"ping": lambda: "pong", "status": self.status, **self.faults.ops()}

    def status(self) -> dict[str, Any]:
        return {"socket": self.config.socket, "upstream": self.config.upstream, **self.faults.describe()}
