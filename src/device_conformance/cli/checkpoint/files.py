"""What every checkpoint verb shares: reading the file, telling the two checkpoints apart, labels."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Literal, cast

from device_conformance.core.errors import BadInput
from device_conformance.kubelet_state import devicemanager as dm
from device_conformance.kubelet_state import dra, drahealth
from device_conformance.kubelet_state.gojson import GoJSONError, object_shape, parse_json

Kind = Literal["devicemanager", "dra", "drahealth"]
KIND_LABELS = {
    "devicemanager": "device-manager checkpoint (kubelet_internal_checkpoint)",
    "dra": "DRA manager checkpoint (dra_manager_state)",
    "drahealth": "DRA health-info checkpoint (dra_health_state)",
}
_WHERE = f"on a node the files are {dm.DEFAULT_PATH}, {dra.DEFAULT_PATH} and {drahealth.DEFAULT_PATH}"


def add_kind(p: argparse.ArgumentParser, auto: bool = True) -> None:
    choices = ["auto", "devicemanager", "dra", "drahealth"] if auto else ["devicemanager", "dra", "drahealth"]
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
    """Which checkpoint the bytes are: a string Data or version/entries keys mean DRA; an object of objects (driver
    name -> {"Devices": ...}) the DRA health cache; an empty object goes by the file's name."""
    if requested in ("dra", "devicemanager", "drahealth"):
        return cast(Kind, requested)
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
    if kinds and set(kinds.values()) <= {"object", "null"}:
        return "drahealth"
    if drahealth.FILE_NAME in path.name:
        return "drahealth"
    if dra.FILE_NAME in path.name:
        return "dra"
    if dm.FILE_NAME in path.name:
        return "devicemanager"
    raise BadInput(
        f"{path} is JSON but not a recognisable checkpoint (no Data, version or entries key, no driver objects)",
        "pass --kind devicemanager, dra or drahealth, or point at kubelet_internal_checkpoint / dra_manager_state / "
        "dra_health_state",
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
