"""`device-conformance checkpoint verify FILE`: exit 0 when the kubelet would accept the file."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from device_conformance.cli.checkpoint.files import KIND_LABELS, Kind, add_kind, detect_kind, read
from device_conformance.core.errors import BadInput
from device_conformance.kubelet_state import devicemanager as dm
from device_conformance.kubelet_state import dra, drahealth


def add_parser(verbs: argparse._SubParsersAction) -> None:
    v = verbs.add_parser(
        "verify", help="exit 0 if the kubelet would accept the file (its checksum; dra_health_state has none)"
    )
    v.add_argument("file", type=Path)
    v.add_argument("--kubelet-version", metavar="1.N", help="judge as this kubelet minor version reads files")
    add_kind(v)
    v.set_defaults(func=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    data = read(args.file)
    kind = detect_kind(args.file, data, args.kind)
    minor = _minor(args.kubelet_version) if args.kubelet_version else None
    print(f"file: {args.file}")
    print(f"kind: {KIND_LABELS[kind]}")
    parsed: dm.ParsedCheckpoint | dra.ParsedDRA | drahealth.ParsedHealth
    if kind == "drahealth":
        parsed = drahealth.parse(data)
    else:
        parsed = dm.parse(data) if kind == "devicemanager" else dra.parse(data)
    print(f"format: {parsed.label}")
    print(f"stored checksum: {_num(parsed.stored_checksum)}")
    print(f"computed checksum: {_num(parsed.computed_checksum)}")
    for line in _status_lines(kind, parsed):
        print(line)
    ok = parsed.valid
    if minor is not None:
        ok = parsed.readable_by(minor)
        print(f"kubelet 1.{minor}: {'accepts' if ok else 'rejects'} this file")
    return 0 if ok else 1


def _num(n: int | None) -> str:
    return "-" if n is None else str(n)


def _status_lines(kind: Kind, parsed: dm.ParsedCheckpoint | dra.ParsedDRA | drahealth.ParsedHealth) -> list[str]:
    if isinstance(parsed, drahealth.ParsedHealth):
        # healthinfo.go loadFromCheckpoint: no checksum; an error is logged and the kubelet starts regardless.
        if parsed.valid:
            return ["checksum: none (the kubelet writes none)", "OK: the kubelet loads it"]
        return [
            "checksum: none (the kubelet writes none)",
            f"REJECTED: {parsed.reason}; the kubelet starts with what decoded, an empty health cache for a file "
            "that is not JSON",
        ]
    consequence = (
        "the kubelet starts with no device allocations"
        if kind == "devicemanager"
        else "a kubelet with DRA enabled refuses to start"
    )
    if parsed.computed_checksum is None:  # json.Unmarshal already failed
        return ["checksum: not checked", f"REJECTED: {parsed.reason}; {consequence}"]
    if parsed.stored_checksum != parsed.computed_checksum:
        return [
            f"checksum MISMATCH: stored {parsed.stored_checksum} != computed {parsed.computed_checksum}; "
            f"the kubelet reports 'checkpoint is corrupted' and {consequence.removeprefix('the kubelet ')}"
        ]
    if not parsed.valid:  # DRA: checksum fine, but the Data string does not decode
        return ["checksum: OK", f"REJECTED: {parsed.reason}; {consequence}"]
    if isinstance(parsed, dm.ParsedCheckpoint):
        return ["checksum: OK", "readers: " + _dm_readers(parsed)]
    return ["checksum: OK"] + ([f"layout: {parsed.variant}"] if parsed.variant else [])


def _dm_readers(p: dm.ParsedCheckpoint) -> str:
    if p.v2_ok and p.v1_ok:
        return "every kubelet 1.11+ restores it (empty data hashes the same in v1 and v2)"
    if p.v2_ok:
        return "kubelets 1.20+ restore it"
    return "kubelets 1.11-1.19 and 1.23-1.29 restore it; 1.20-1.22 and 1.30+ start with no allocations"


def _minor(text: str) -> int:
    m = re.fullmatch(r"v?(?:1\.)?(\d+)(?:\.\d+.*)?", text.strip())
    if not m:
        raise BadInput(f"--kubelet-version {text!r} is not a Kubernetes version", "use e.g. 1.30 or v1.30.2")
    return int(m.group(1))
