"""Print a value of the Go value model (gotypes) the way go-spew v1.1.1 ``%#v`` does, with the
kubelet's hashing config (SortKeys, DisableMethods, SpewKeys), plus FNV-1a-32: together the
device-manager checkpoint checksum."""

from __future__ import annotations

from typing import Any

from device_conformance.kubelet_state.gotypes import (
    Bytes,
    GoType,
    Map,
    Pointer,
    Scalar,
    Slice,
)


def fnv1a_32(data: bytes) -> int:
    """FNV-1a, 32 bit (Go's hash/fnv New32a)."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def spew(t: GoType, value: Any) -> str:
    """What ``spew.ConfigState{SortKeys, DisableMethods, SpewKeys}.Sprintf("%#v", v)`` prints."""
    out: list[str] = []
    _format(t, value, out, show_type=True)
    return "".join(out)


def spew_fnv(t: GoType, value: Any) -> int:
    """The kubelet's DeepHashObject: FNV-1a-32 over the UTF-8 of the spew string."""
    return fnv1a_32(spew(t, value).encode("utf-8"))


def _format(t: GoType, v: Any, out: list[str], show_type: bool) -> None:
    if isinstance(t, Pointer):
        _format_ptr(t, v, out, show_type)
        return
    if show_type:
        out.append(f"({t.name})")
    if isinstance(t, Scalar):
        out.append(("true" if v else "false") if t.kind == "bool" else str(v))
    elif isinstance(t, Bytes):
        # spew's formatter (unlike Dump) prints []uint8 like any slice: decimal elements.
        out.append("<nil>" if v is None else "[" + " ".join(str(b) for b in v) + "]")
    elif isinstance(t, Slice):
        if v is None:
            out.append("<nil>")
            return
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(" ")
            _format(t.elem, item, out, show_type=False)
        out.append("]")
    elif isinstance(t, Map):
        if v is None:
            out.append("<nil>")
            return
        out.append("map[")
        for i, key in enumerate(_sorted_keys(t.key, v)):
            if i:
                out.append(" ")
            _format(t.key, key, out, show_type=False)
            out.append(":")
            _format(t.elem, v[key], out, show_type=False)
        out.append("]")
    else:
        out.append("{")
        for i, f in enumerate(t.fields):
            if i:
                out.append(" ")
            out.append(f.name + ":")
            _format(f.type, v[f.name], out, show_type=True)
        out.append("}")


def _format_ptr(t: Pointer, v: Any, out: list[str], show_type: bool) -> None:
    # spew prints a typed nil as "(*T)<nil>", but a nil element of a slice/map as bare "<nil>",
    # and a non-nil element pointer as "<*>" followed by the pointee.
    if v is None:
        out.append(f"({t.name})<nil>" if show_type else "<nil>")
        return
    out.append(f"(*{t.elem.name})" if show_type else "<*>")
    _format(t.elem, v, out, show_type=False)


def _sorted_keys(kt: Scalar, m: dict) -> list:
    # SortKeys: Go compares strings bytewise (UTF-8), integers numerically.
    if kt.kind == "string":
        return sorted(m, key=lambda k: k.encode("utf-8"))
    return sorted(m)
