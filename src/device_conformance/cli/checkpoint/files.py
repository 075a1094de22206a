"""What every checkpoint verb shares: reading the file, telling the two checkpoints apart, labels."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Literal

from device_conformance.errors import BadInput
from device_conformance.kubelet_state import devicemanager as dm
from device_conformance.kubelet_state import dra
from device_conformance.kubelet_state.gojson import GoJSONError, object_shape, parse_json

Kind = Literal["devicemanager", "dra"]
KIND_LABELS = {
    "devicemanager": "device-manager checkpoint (kubelet_internal_checkpoint)",
    "dra": "DRA manager checkpoint (dra_manager_state)",
}
_WHERE = f"on a node the files are {dm.DEFAULT_PATH} and {dra.DEFAULT_PATH}"


def add_kind(p: argparse.ArgumentParser, auto: bool = True) -> None:
    choices = ["auto", "devicemanager", "dra"] if auto else ["devicemanager", "dra"]
    p.add_argument(
        "--kind",
        choices=choices,
        default="auto" if auto else None,
        help="which checkpoint (default: detected from the content)"
        if auto
        else "which checkpoint to write (default: devicemanager, or the spec's kind)",
    )


def read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file", f"check the path; {_WHERE}") from None
    except IsADirectoryError:
        raise BadInput(f"{path} is a directory", f"pass the checkpoint file itself; {_WHERE}") from None
    except PermissionError:
        raise BadInput(
            f"{path}: permission denied", "the kubelet's files are root-only (mode 0600); run as root"
        ) from None


def detect_kind(path: Path, data: bytes, requested: str = "auto") -> Kind:
    """Which checkpoint the bytes are: a string Data or version/entries keys mean DRA."""
    if requested == "dra":
        return "dra"
    if requested == "devicemanager":
        return "devicemanager"
    shape = object_shape(data)
    if shape is None:
        raise BadInput(
            f"{path} is not a kubelet checkpoint: {_not_json_reason(data)} (a kubelet rejects it too)",
            "restore a good copy or delete the file; run 'checkpoint show' on a healthy node to compare",
        )
    kinds = {k.lower(): kind for k, kind in shape}
    if kinds.get("data") == "string" or {"version", "entries"} & kinds.keys():
        return "dra"
    if kinds.get("data") in ("object", "null"):
        return "devicemanager"
    if dra.FILE_NAME in path.name:
        return "dra"
    if dm.FILE_NAME in path.name:
        return "devicemanager"
    raise BadInput(
        f"{path} is JSON but not a recognisable checkpoint (no Data, version or entries key)",
        "pass --kind devicemanager or --kind dra, or point at kubelet_internal_checkpoint / dra_manager_state",
    )


def _not_json_reason(data: bytes) -> str:
    if not data.strip():
        return "the file is empty"
    try:
        parse_json(data)
    except GoJSONError as exc:
        return str(exc)
    return "its top level is not a JSON object"


def id_list(values: list[str] | None) -> str:
    return "(null)" if values is None else " ".join(values) if values else "(empty)"
