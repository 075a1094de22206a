"""Go ``encoding/json`` semantics over the Go value model (gotypes): decode exactly as Go would
(case-insensitive keys, ``null`` semantics, maps merged in place, slice elements reused from the
backing array) and encode as ``json.Marshal`` does (field order, sorted map keys, HTML-safe escaping)."""

from __future__ import annotations

import base64
import codecs
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from device_conformance.kubelet_state.gotypes import (
    UINT8,
    Bytes,
    GoType,
    Map,
    Pointer,
    Scalar,
    Slice,
    Struct,
    zero,
)

# ---------------------------------------------------------------------------------------------
# encoding/json: decoding


class GoJSONError(ValueError):
    """json.Unmarshal returned an error; the message is Go's where we reproduce it."""


@dataclass
class _Num:
    """A JSON number kept as its literal text, because Go parses the literal per target type."""

    text: str


class _Obj:
    """A JSON object as its (key, value) pairs in file order, duplicates kept."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        self.pairs = pairs

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self.pairs)


_INT_KEY = re.compile(r"[+-]?[0-9]+\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")


def _go_replace(err: UnicodeDecodeError) -> tuple[str, int]:
    # Go's decoder replaces each invalid byte with U+FFFD (Python would merge a bad run into one).
    return "\ufffd", err.start + 1


codecs.register_error("device_conformance.go_utf8", _go_replace)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid character {name[0]!r} looking for beginning of value")


def parse_json(data: bytes) -> Any:
    """Parse JSON with Go's syntax rules, keeping object key order/duplicates and number literals.

    Raises GoJSONError("invalid JSON: ...") where Go's syntax check would fail.
    """
    text = data.decode("utf-8", errors="device_conformance.go_utf8")
    try:
        tree = json.loads(
            text,
            object_pairs_hook=_Obj,
            parse_int=_Num,
            parse_float=_Num,
            parse_constant=_reject_constant,
        )
    except RecursionError:
        raise GoJSONError("invalid JSON: exceeded max depth") from None
    except ValueError as exc:
        raise GoJSONError(f"invalid JSON: {exc}") from None
    return _fix_surrogates(tree)


def object_shape(data: bytes) -> list[tuple[str, str]] | None:
    """(key, JSON kind) of each top-level key, in order; None if not JSON or not an object.

    Kinds: object, array, string, number, bool, null. Enough to tell checkpoint formats apart.
    """
    try:
        tree = parse_json(data)
    except GoJSONError:
        return None
    if not isinstance(tree, _Obj):
        return None
    return [(k, "null" if v is None else _json_kind(v)) for k, v in tree]


def _fix_surrogates(node: Any) -> Any:
    # Go turns an unpaired \uD800-\uDFFF escape into U+FFFD; Python keeps the lone surrogate.
    if isinstance(node, str):
        return _SURROGATE.sub("\ufffd", node) if _SURROGATE.search(node) else node
    if isinstance(node, _Obj):
        return _Obj([(_fix_surrogates(k), _fix_surrogates(v)) for k, v in node])
    if isinstance(node, list):
        return [_fix_surrogates(v) for v in node]
    return node


def _fold(name: str) -> str:
    # encoding/json matches keys with Unicode simple folding; for ASCII field names the only
    # non-ASCII runes that can match are KELVIN SIGN (k) and LATIN SMALL LONG S (s).
    return name.replace("\u212a", "k").replace("\u017f", "s").lower()


class _SliceBuf:
    """A slice while decoding: its elements plus the stale tail of its backing array.

    Go decodes a JSON array into a slice by resetting its length and then decoding element i
    *into* backing[i] when the capacity allows, so a repeated key sees the previous elements'
    fields ("PodDeviceEntries" twice merges into the old entries)."""

    __slots__ = ("items", "tail")

    def __init__(self, items: list, tail: list) -> None:
        self.items = items
        self.tail = tail


class _Decoder:
    def __init__(self) -> None:
        self.error: str | None = None
        self.struct: Struct | None = None  # innermost struct being filled (for messages)
        self.fields: list[str] = []  # field names from the top, as Go's errorContext keeps them

    def fail(self, what: str, t: GoType) -> None:
        # Go keeps decoding after a type error and returns the first one.
        if self.error is not None:
            return
        if self.struct is not None or self.fields:
            where = f"Go struct field {self.struct.short_name if self.struct else ''}.{'.'.join(self.fields)}"
        else:
            where = "Go value"
        self.error = f"json: cannot unmarshal {what} into {where} of type {t.name}"

    def fail_plain(self, message: str) -> None:
        if self.error is None:
            self.error = message

    def value(self, t: GoType, node: Any, cur: Any) -> Any:
        if node is None:
            # null: nil for slices/maps/pointers/[]byte, a no-op for everything else.
            return None if isinstance(t, Slice | Map | Bytes | Pointer) else cur
        if isinstance(t, Pointer):
            return self.value(t.elem, node, zero(t.elem) if cur is None else cur)
        if isinstance(t, Struct):
            return self.struct_value(t, node, cur)
        if isinstance(t, Map):
            return self.map_value(t, node, cur)
        if isinstance(t, Slice):
            return self.slice_value(t, node, cur)
        if isinstance(t, Bytes):
            return self.bytes_value(t, node, cur)
        return self.scalar(t, node, cur)

    def struct_value(self, t: Struct, node: Any, cur: dict) -> dict:
        if not isinstance(node, _Obj):
            self.fail(_json_kind(node), t)
            return cur
        out = dict(cur)
        exact = {f.json_name: f for f in t.fields}
        folded = {_fold(f.json_name): f for f in t.fields}
        for key, sub in node:
            f = exact.get(key) or folded.get(_fold(key))
            if f is None:
                continue  # unknown keys are ignored
            saved = (self.struct, len(self.fields))
            self.struct = t
            self.fields.append(f.name)
            out[f.name] = self.value(f.type, sub, out[f.name])
            self.struct = saved[0]
            del self.fields[saved[1] :]
        return out

    def map_value(self, t: Map, node: Any, cur: dict | None) -> dict | None:
        if not isinstance(node, _Obj):
            self.fail(_json_kind(node), t)
            return cur
        out = {} if cur is None else dict(cur)  # Go fills an existing map in place
        for key, sub in node:
            elem = self.value(t.elem, sub, zero(t.elem))  # each value starts from zero
            if t.key.kind == "string":
                out[key] = elem
                continue
            n = int(key) if _INT_KEY.match(key) else None
            if n is None or not _fits(t.key, n):
                self.fail(f"number {key}", t.key)
                continue
            out[n] = elem
        return out

    def slice_value(self, t: Slice, node: Any, cur: Any) -> Any:
        if not isinstance(node, list):
            self.fail(_json_kind(node), t)
            return cur
        if not node:
            return _SliceBuf([], [])  # Go makes a fresh empty slice: nothing stale survives
        backing = [] if cur is None else cur.items + cur.tail
        items = [
            self.value(t.elem, sub, backing[i] if i < len(backing) else zero(t.elem)) for i, sub in enumerate(node)
        ]
        return _SliceBuf(items, backing[len(items) :])

    def bytes_value(self, t: Bytes, node: Any, cur: bytes | None) -> bytes | None:
        if isinstance(node, str):
            try:
                return go_base64_decode(node)
            except GoJSONError as exc:
                self.fail_plain(str(exc))
                return cur
        if isinstance(node, list):
            # A JSON array of numbers also decodes into []byte, element by element.
            # Like any slice, element i is decoded over the previous byte at i (null keeps it).
            old = cur or b""
            return bytes(self.value(UINT8, sub, old[i] if i < len(old) else 0) for i, sub in enumerate(node))
        self.fail(_json_kind(node), t)
        return cur

    def scalar(self, t: Scalar, node: Any, cur: Any) -> Any:
        if t.kind == "string":
            if isinstance(node, str):
                return node
        elif t.kind == "bool":
            if isinstance(node, bool):
                return node
        elif isinstance(node, _Num):
            n = _parse_go_int(node.text, t)
            if n is None:
                self.fail(f"number {node.text}", t)
                return cur
            return n
        self.fail(_json_kind(node), t)
        return cur


def _json_kind(node: Any) -> str:
    if isinstance(node, _Obj):
        return "object"
    if isinstance(node, list):
        return "array"
    if isinstance(node, bool):
        return "bool"
    if isinstance(node, _Num):
        return "number"
    return "string"


def _fits(t: Scalar, n: int) -> bool:
    if t.kind == "int":
        return -(1 << (t.bits - 1)) <= n < (1 << (t.bits - 1))
    return 0 <= n < (1 << t.bits)


def _parse_go_int(text: str, t: Scalar) -> int | None:
    # strconv.ParseInt/ParseUint(text, 10, 64): digits only (a JSON literal has no '+'), no
    # fraction or exponent, no '-' for unsigned.
    if not re.fullmatch(r"-?[0-9]+", text) or (t.kind == "uint" and text.startswith("-")):
        return None
    n = int(text)
    return n if _fits(t, n) else None


def _finish(node: Any) -> Any:
    if isinstance(node, _SliceBuf):
        return [_finish(v) for v in node.items]
    if isinstance(node, dict):
        return {k: _finish(v) for k, v in node.items()}
    return node


def go_json_decode(t: GoType, data: bytes, initial: Any = None) -> tuple[Any, str | None]:
    """``json.Unmarshal(data, &v)`` with ``v`` pre-set to ``initial`` (default: Go's zero value).

    Returns (value, error). As in Go, a type error does not stop decoding: the value holds
    everything that did decode and the error is the first one met. Syntax errors raise nothing
    here either; they come back as (initial, "invalid JSON: ...") with no decoding done.
    """
    start = zero(t) if initial is None else _wrap_slices(initial)
    try:
        tree = parse_json(data)
    except GoJSONError as exc:
        return _finish(start), str(exc)
    dec = _Decoder()
    value = dec.value(t, tree, start)
    return _finish(value), dec.error


def _wrap_slices(node: Any) -> Any:
    # Pre-initialised values (the kubelet's make([]T, 0)) enter the decoder with no stale tail.
    if isinstance(node, list):
        return _SliceBuf([_wrap_slices(v) for v in node], [])
    if isinstance(node, dict):
        return {k: _wrap_slices(v) for k, v in node.items()}
    return node


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_B64_INDEX = {c: i for i, c in enumerate(_B64)}


def go_base64_decode(s: str) -> bytes:
    """base64.StdEncoding.Decode as encoding/json uses it: padding required, CR/LF skipped,
    non-canonical trailing bits accepted; errors name the byte offset as Go does."""
    src = s.encode("utf-8")
    out = bytearray()
    si = 0
    while True:
        quantum: list[int] = []
        dlen = 4
        while len(quantum) < 4:
            j = len(quantum)
            if si == len(src):
                if j == 0:
                    return bytes(out)
                raise GoJSONError(f"illegal base64 data at input byte {si - j}")
            c = chr(src[si])
            si += 1
            if c in _B64_INDEX:
                quantum.append(_B64_INDEX[c])
                continue
            if c in "\r\n":
                continue
            if c != "=" or j < 2:
                raise GoJSONError(f"illegal base64 data at input byte {si - 1}")
            if j == 2:  # a second "=" must follow, newlines allowed in between
                while si < len(src) and chr(src[si]) in "\r\n":
                    si += 1
                if si == len(src):
                    raise GoJSONError(f"illegal base64 data at input byte {len(src)}")
                if chr(src[si]) != "=":
                    raise GoJSONError(f"illegal base64 data at input byte {si - 1}")
                si += 1
            while si < len(src) and chr(src[si]) in "\r\n":
                si += 1
            if si < len(src):
                raise GoJSONError(f"illegal base64 data at input byte {si}")
            dlen = j
            break
        val = 0
        for k in range(4):
            val = (val << 6) | (quantum[k] if k < len(quantum) else 0)
        out += val.to_bytes(3, "big")[: dlen - 1]
        if dlen < 4:
            return bytes(out)


# ---------------------------------------------------------------------------------------------
# encoding/json: encoding


def go_json_encode(t: GoType, value: Any) -> bytes:
    """``json.Marshal(v)`` byte for byte: compact, struct fields in declaration order, map keys
    sorted as strings, []byte as padded base64, HTML-safe string escaping (Go 1.22+ rules)."""
    out: list[str] = []
    _encode(t, value, out)
    return "".join(out).encode("utf-8")


def _encode(t: GoType, v: Any, out: list[str]) -> None:
    if isinstance(t, Pointer):
        if v is None:
            out.append("null")
        else:
            _encode(t.elem, v, out)
    elif isinstance(t, Scalar):
        if t.kind == "string":
            out.append(go_json_string(v))
        elif t.kind == "bool":
            out.append("true" if v else "false")
        else:
            out.append(str(int(v)))
    elif isinstance(t, Bytes):
        out.append("null" if v is None else '"' + base64.b64encode(v).decode("ascii") + '"')
    elif isinstance(t, Slice):
        if v is None:
            out.append("null")
            return
        out.append("[")
        for i, item in enumerate(v):
            if i:
                out.append(",")
            _encode(t.elem, item, out)
        out.append("]")
    elif isinstance(t, Map):
        if v is None:
            out.append("null")
            return
        keyed = sorted(((str(k), k) for k in v), key=lambda p: p[0].encode("utf-8"))
        out.append("{")
        for i, (ks, k) in enumerate(keyed):
            if i:
                out.append(",")
            out.append(go_json_string(ks) + ":")
            _encode(t.elem, v[k], out)
        out.append("}")
    else:
        out.append("{")
        first = True
        for f in t.fields:
            if f.omitempty and _is_empty(f.type, v[f.name]):
                continue
            if not first:
                out.append(",")
            first = False
            out.append(go_json_string(f.json_name) + ":")
            _encode(f.type, v[f.name], out)
        out.append("}")


def _is_empty(t: GoType, v: Any) -> bool:
    if isinstance(t, Struct):
        return False  # omitempty never omits a struct
    return not v


_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def go_json_string(s: str) -> str:
    """A Go-encoded JSON string: <, >, &, U+2028, U+2029 and control characters as \\u escapes."""
    out = ['"']
    for ch in s:
        if ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif ch < " " or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        elif "\ud800" <= ch <= "\udfff":
            out.append("\\ufffd")  # not valid UTF-8; Go writes the replacement character
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)
