"""Messages as evidence lines: one compact JSON object per RPC request or answer."""

from __future__ import annotations

import json

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message


def show(message: Message) -> str:
    return json.dumps(MessageToDict(message, preserving_proto_field_name=True), sort_keys=True)


def rpc_error(err: grpc.RpcError) -> str:
    code = err.code() if hasattr(err, "code") else None
    details = err.details() if hasattr(err, "details") else str(err)
    return f"{code.name if code else 'UNKNOWN'}: {details}"
