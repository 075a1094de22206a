"""Runs one unary handler: logs request, response or error to the call log, turns failures into gRPC status."""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from device_conformance.fakes.dra_driver.calllog import CallLog

M = TypeVar("M", bound=Message)


class RpcFailure(Exception):
    """End the call with this gRPC status (code = grpc.StatusCode member name)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


def to_dict(message: Message) -> dict[str, Any]:
    # Defaults included: a test must see plugin_registered=False and empty device lists explicitly.
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def has_claim_errors(response: dict[str, Any]) -> bool:
    return any(c.get("error") for c in (response.get("claims") or {}).values())


def handle_unary(
    calls: CallLog, method: str, request: Message, context: grpc.ServicerContext, fn: Callable[[], M]
) -> M:
    start = time.time()
    req = to_dict(request)
    try:
        response = fn()
    except RpcFailure as failure:
        calls.record(method, req, start=start, error={"code": failure.code, "message": failure.message})
        context.abort(grpc.StatusCode[failure.code], failure.message)
    except Exception as exc:  # a bug in the fake must still show up in the log, not just as INTERNAL
        traceback.print_exc(file=sys.stderr)
        calls.record(method, req, start=start, error={"code": "INTERNAL", "message": repr(exc)})
        context.abort(grpc.StatusCode.INTERNAL, f"fake DRA driver bug: {exc!r}")
    resp = to_dict(response)
    calls.record(method, req, start=start, response=resp, ok=not has_claim_errors(resp))
    return response
