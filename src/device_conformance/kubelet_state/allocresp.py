"""``AllocResp`` of a device-manager checkpoint entry: protobuf ``v1beta1.ContainerAllocateResponse``.

A hand-rolled wire codec for that one message (staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/
api.proto), so a checkpoint reads and writes without the generated stubs and byte for byte as the
kubelet's gogo-generated Marshal writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Mount:
    container_path: str = ""
    host_path: str = ""
    read_only: bool = False


@dataclass
class DeviceSpec:
    container_path: str = ""
    host_path: str = ""
    permissions: str = ""


@dataclass
class ContainerAllocateResponse:
    """envs=1, mounts=2, devices=3, annotations=4, cdi_devices=5 (CDIDevice.name=1)."""

    envs: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    devices: list[DeviceSpec] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: list[str] = field(default_factory=list)


class ProtoError(ValueError):
    """AllocResp bytes that do not decode; the kubelet skips such an entry."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtoError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result & ((1 << 64) - 1), pos
        shift += 7
        if shift >= 70:
            raise ProtoError("varint longer than 10 bytes")


def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varint/fixed, bytes for length-delimited."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        num, wire = key >> 3, key & 7
        if num == 0:
            raise ProtoError("field number 0")
        if wire == 0:
            value, pos = _varint(buf, pos)
            out.append((num, value))
        elif wire == 2:
            size, pos = _varint(buf, pos)
            if pos + size > len(buf):
                raise ProtoError(f"field {num}: length {size} runs past the end")
            out.append((num, buf[pos : pos + size]))
            pos += size
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(buf):
                raise ProtoError(f"field {num}: truncated fixed{width * 8}")
            out.append((num, int.from_bytes(buf[pos : pos + width], "little")))
            pos += width
        else:
            raise ProtoError(f"field {num}: unsupported wire type {wire}")
    return out


def _text(num: int, value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise ProtoError(f"field {num}: expected a length-delimited string")
    try:
        return value.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtoError(f"field {num}: string is not valid UTF-8") from None


def _message(num: int, value: int | bytes) -> dict[int, Any]:
    if not isinstance(value, bytes):
        raise ProtoError(f"field {num}: expected an embedded message")
    out: dict[int, Any] = {}
    for n, v in _fields(value):
        out[n] = v  # proto3 scalars: the last one wins
    return out


def decode_alloc_resp(data: bytes | None) -> ContainerAllocateResponse:
    """Decode AllocResp bytes (None/empty decode to an empty response, as in Go)."""
    resp = ContainerAllocateResponse()
    for num, value in _fields(data or b""):
        if num in (1, 4):
            kv = _message(num, value)
            target = resp.envs if num == 1 else resp.annotations
            target[_text(1, kv.get(1, b""))] = _text(2, kv.get(2, b""))
        elif num == 2:
            m = _message(num, value)
            resp.mounts.append(Mount(_text(1, m.get(1, b"")), _text(2, m.get(2, b"")), bool(m.get(3, 0))))
        elif num == 3:
            d = _message(num, value)
            resp.devices.append(DeviceSpec(_text(1, d.get(1, b"")), _text(2, d.get(2, b"")), _text(3, d.get(3, b""))))
        elif num == 5:
            resp.cdi_devices.append(_text(1, _message(num, value).get(1, b"")))
        # unknown fields are skipped, as protobuf does
    return resp


def _put_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _put_bytes(num: int, payload: bytes) -> bytes:
    return _put_varint(num << 3 | 2) + _put_varint(len(payload)) + payload


def _put_str(num: int, s: str) -> bytes:
    # proto3 leaves empty strings out
    return _put_bytes(num, s.encode("utf-8")) if s else b""


def _put_entry(num: int, key: str, value: str) -> bytes:
    # map entries carry key and value even when empty (gogo and golang/protobuf alike)
    return _put_bytes(num, _put_bytes(1, key.encode("utf-8")) + _put_bytes(2, value.encode("utf-8")))


def encode_alloc_resp(resp: ContainerAllocateResponse) -> bytes:
    """Fields in number order, map keys sorted (the kubelet's gogo-generated Marshal)."""
    out = bytearray()
    for k in sorted(resp.envs):
        out += _put_entry(1, k, resp.envs[k])
    for m in resp.mounts:
        read_only = _put_varint(3 << 3) + b"\x01" if m.read_only else b""
        out += _put_bytes(2, _put_str(1, m.container_path) + _put_str(2, m.host_path) + read_only)
    for d in resp.devices:
        out += _put_bytes(3, _put_str(1, d.container_path) + _put_str(2, d.host_path) + _put_str(3, d.permissions))
    for k in sorted(resp.annotations):
        out += _put_entry(4, k, resp.annotations[k])
    for name in resp.cdi_devices:
        out += _put_bytes(5, _put_str(1, name))
    return bytes(out)
