"""The Go value model the kubelet's checkpoint codecs share (gospew prints it, gojson reads and writes it).

A Go type is described by a descriptor (``Scalar``, ``Bytes``, ``Slice``, ``Map``, ``Struct``,
``Pointer``) and a value is a plain Python object interpreted through its descriptor: ``str``/``int``/
``bool`` for scalars, ``bytes``/``list``/``dict`` for []byte/slices/maps with ``None`` meaning Go's nil
(never "empty"), ``dict`` keyed by Go field name for structs (every field present), and ``None`` or the
pointee for pointers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Scalar:
    """A string, integer or bool type; ``name`` is what reflect's Type.String() prints."""

    name: str
    kind: Literal["string", "int", "uint", "bool"]
    bits: int = 64


@dataclass(frozen=True)
class Bytes:
    """A []byte; Go names it ``[]uint8``. JSON carries it as base64."""

    name: str = "[]uint8"


@dataclass(frozen=True)
class Slice:
    name: str
    elem: GoType


@dataclass(frozen=True)
class Map:
    name: str
    key: Scalar
    elem: GoType


@dataclass(frozen=True)
class Field:
    """A struct field; ``json`` is the tag name (None: the Go name), as in `json:"name,omitempty"`."""

    name: str
    type: GoType
    json: str | None = None
    omitempty: bool = False

    @property
    def json_name(self) -> str:
        return self.json if self.json is not None else self.name


@dataclass(frozen=True)
class Struct:
    name: str
    fields: tuple[Field, ...]

    @property
    def short_name(self) -> str:
        """reflect's Type.Name(): the name without the package, used in json error messages."""
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Pointer:
    elem: GoType

    @property
    def name(self) -> str:
        return "*" + self.elem.name


GoType = Scalar | Bytes | Slice | Map | Struct | Pointer

STRING = Scalar("string", "string")
INT64 = Scalar("int64", "int", 64)
UINT64 = Scalar("uint64", "uint", 64)
UINT32 = Scalar("uint32", "uint", 32)
UINT8 = Scalar("uint8", "uint", 8)
BOOL = Scalar("bool", "bool")
STRING_SLICE = Slice("[]string", STRING)
EMPTY_STRUCT = Struct("sets.Empty", ())


def zero(t: GoType) -> Any:
    """Go's zero value for ``t``: nil for slices, maps, []byte and pointers."""
    if isinstance(t, Scalar):
        return {"string": "", "int": 0, "uint": 0, "bool": False}[t.kind]
    if isinstance(t, Struct):
        return {f.name: zero(f.type) for f in t.fields}
    return None
