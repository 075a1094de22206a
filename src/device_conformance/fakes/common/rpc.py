"""The gRPC side every fake shares: log the call, apply the injected faults, answer or end with a status."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import grpc
from google.protobuf.message import Message

from device_conformance.fakes.common.calls import Call, CallLog
from device_conformance.fakes.common.faults import Faults, Status

M = TypeVar("M", bound=Message)


def to_dict(message: Message) -> dict[str, Any]:
    # Imported at the first call, not at start: json_format pulls in descriptor_pool and text_format (about
    # 50 ms of compiling with no bytecode cache) before the fake's control socket could answer.
    from google.protobuf.json_format import MessageToDict

    # Defaults included: a test must see plugin_registered=False and empty device lists explicitly.
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def end_call(log: CallLog, call: Call, context: grpc.ServicerContext, status: Status) -> NoReturn:
    """Log the status, then end the call with it (context.abort raises; gRPC sends the status)."""
    log.finish(call, error={"code": status.code, "message": status.message})
    context.abort(grpc.StatusCode[status.code], status.message)
    raise AssertionError("unreachable")  # pragma: no cover - abort always raises


@dataclass(frozen=True)
class Served:
    """One gRPC service of a fake on one socket: where its calls are logged and which faults they obey."""

    log: CallLog
    faults: Faults
    service: str  # full gRPC service name, e.g. "v1beta1.DevicePlugin"
    socket: str  # file name of the socket it is served on

    def start(self, method: str, request: Message) -> Call:
        return self.log.start(method, to_dict(request), service=self.service, socket=self.socket)

    def admit(self, call: Call, context: grpc.ServicerContext, claim_uids: Sequence[str] = ()) -> dict[str, str]:
        """Apply the faults to a logged call: returns the per-claim errors for its answer, or ends the call
        when a fault says so or the caller went away while a fault held it."""
        verdict = self.faults.admit(call.method, claim_uids, is_active=context.is_active)
        if verdict.cancelled:
            end_call(self.log, call, context, Status("CANCELLED", "the caller went away while the test held the call"))
        if verdict.error is not None:
            end_call(self.log, call, context, verdict.error)
        return verdict.claim_errors

    def unary(
        self,
        method: str,
        request: Message,
        context: grpc.ServicerContext,
        answer: Callable[[dict[str, str]], M],
        claim_uids: Sequence[str] = (),
    ) -> M:
        """One unary call: logged when it starts, faults applied, answer(claim_errors) logged when it ends."""
        call = self.start(method, request)
        claim_errors = self.admit(call, context, claim_uids)
        try:
            response = answer(claim_errors)
        except Exception as exc:  # a bug in the fake must show up in the call log, not only as INTERNAL
            traceback.print_exc(file=sys.stderr)
            end_call(self.log, call, context, Status("INTERNAL", f"bug in the fake: {exc!r}"))
        self.log.finish(call, response=to_dict(response))
        return response


class UnknownMethods(grpc.GenericRpcHandler):
    """Added after a server's services: a call to any other method is logged (error UNIMPLEMENTED), then answered
    with UNIMPLEMENTED, as gRPC answers a service the server lacks. A test can then see the kubelet asking a fake
    for a service it never advertised (kubernetes#141855: a 1.36 kubelet opens the DRA health stream of every
    driver)."""

    def __init__(self, log: CallLog, socket: str) -> None:
        self._log = log
        self._socket = socket

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        # "/v1alpha1.DRAResourceHealth/NodeWatchResources" -> service, method
        service, _, method = handler_call_details.method.lstrip("/").rpartition("/")
        message = f"unknown service {service}"

        def answer(request: bytes, context: grpc.ServicerContext) -> bytes:
            # No deserializer: the request stays raw bytes. The answer fits unary and server-streaming
            # callers alike: one request in, a status out.
            call = self._log.start(method, {"size": len(request)}, service=service, socket=self._socket)
            end_call(self._log, call, context, Status("UNIMPLEMENTED", message))

        return grpc.unary_unary_rpc_method_handler(answer)
