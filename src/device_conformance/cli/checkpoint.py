"""`device-conformance checkpoint verify|show|forge`: the kubelet's device state files by hand.

Works on both ``kubelet_internal_checkpoint`` (device manager) and ``dra_manager_state`` (DRA),
told apart by content. Exit codes: 0 the kubelet would accept the file, 1 it would not,
2 bad input (raised as BadInput, printed by cli.main).
"""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

import yaml

from device_conformance.errors import BadInput
from device_conformance.kubelet_state import allocresp, dra
from device_conformance.kubelet_state import devicemanager as dm
from device_conformance.kubelet_state.gojson import GoJSONError, object_shape, parse_json

Kind = Literal["devicemanager", "dra"]
_KIND_LABELS = {
    "devicemanager": "device-manager checkpoint (kubelet_internal_checkpoint)",
    "dra": "DRA manager checkpoint (dra_manager_state)",
}
_WHERE = f"on a node the files are {dm.DEFAULT_PATH} and {dra.DEFAULT_PATH}"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "checkpoint",
        help="verify, show or forge the kubelet's device checkpoints",
        description="Read and write kubelet_internal_checkpoint and dra_manager_state exactly as the kubelet does.",
    )
    verbs = p.add_subparsers(dest="checkpoint_verb", required=True, metavar="VERB")

    v = verbs.add_parser("verify", help="exit 0 if the kubelet would accept the file's checksum")
    v.add_argument("file", type=Path)
    v.add_argument("--kubelet-version", metavar="1.N", help="judge as this kubelet minor version reads files")
    _add_kind(v)
    v.set_defaults(func=cmd_verify)

    s = verbs.add_parser("show", help="dump a checkpoint: entries, devices per NUMA node, env/mounts")
    s.add_argument("file", type=Path)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    _add_kind(s)
    s.set_defaults(func=cmd_show)

    f = verbs.add_parser(
        "forge",
        help="write a checkpoint from a spec or flags",
        description="Write a checkpoint byte for byte as a kubelet would, from --entry flags and/or a JSON/YAML "
        "--spec.",
        epilog=_FORGE_SPEC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    f.add_argument("-o", "--output", type=Path, required=True, help="file to write")
    f.add_argument("--spec", type=Path, help="JSON or YAML spec (entries/registered_devices, or kind: dra + claims)")
    f.add_argument("--entry", action="append", default=[], metavar="POD:CONTAINER:RESOURCE=DEV[@NUMA],...")
    f.add_argument("--numa", type=int, default=0, help="NUMA node for devices without @NUMA (default 0; -1: none)")
    f.add_argument("--format", choices=["v2", "v1"], help="device-manager format (default v2, or the spec's)")
    f.add_argument("--boot-id", default=None, help="top-level BootID (v2 only; newest kubelets)")
    f.add_argument("--bad-checksum", action="store_true", help="store a wrong checksum on purpose")
    _add_kind(f, auto=False)
    f.set_defaults(func=cmd_forge)


_FORGE_SPEC_HELP = """\
spec (device manager):
  format: v2                       # or v1
  registered_devices: {example.com/gpu: [g0, g1]}   # default: every device in entries
  entries:
    - pod_uid: 0b5c...
      container: main
      resource: example.com/gpu
      devices: {0: [g0], 1: [g1]}  # or a list: NUMA 0 in v2, as the kubelet converts
      envs: {GPU: "0"}             # AllocResp parts: envs, mounts, annotations, cdi_devices
      # alloc_resp: <base64>       # raw AllocResp instead (null for JSON null)
spec (DRA, 1.31+ format):
  kind: dra
  claims:
    - {claim_uid: u1, claim_name: c, namespace: ns, pod_uids: [p1],
       drivers: {gpu.example.com: [{pool: p, device: gpu-0, request_names: [r], cdi_device_ids: [x]}]}}
"""


def _add_kind(p: argparse.ArgumentParser, auto: bool = True) -> None:
    choices = ["auto", "devicemanager", "dra"] if auto else ["devicemanager", "dra"]
    p.add_argument(
        "--kind",
        choices=choices,
        default="auto" if auto else None,
        help="which checkpoint (default: detected from the content)"
        if auto
        else "which checkpoint to write (default: devicemanager, or the spec's kind)",
    )


# ---------------------------------------------------------------------------------------------
# Loading


def _read(path: Path) -> bytes:
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


def _minor(text: str) -> int:
    m = re.fullmatch(r"v?(?:1\.)?(\d+)(?:\.\d+.*)?", text.strip())
    if not m:
        raise BadInput(f"--kubelet-version {text!r} is not a Kubernetes version", "use e.g. 1.30 or v1.30.2")
    return int(m.group(1))


# ---------------------------------------------------------------------------------------------
# verify


def cmd_verify(args: argparse.Namespace) -> int:
    data = _read(args.file)
    kind = detect_kind(args.file, data, args.kind)
    minor = _minor(args.kubelet_version) if args.kubelet_version else None
    print(f"file: {args.file}")
    print(f"kind: {_KIND_LABELS[kind]}")
    parsed: dm.ParsedCheckpoint | dra.ParsedDRA
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


def _status_lines(kind: Kind, parsed: dm.ParsedCheckpoint | dra.ParsedDRA) -> list[str]:
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


# ---------------------------------------------------------------------------------------------
# show


def cmd_show(args: argparse.Namespace) -> int:
    data = _read(args.file)
    kind = detect_kind(args.file, data, args.kind)
    doc = _dm_doc(dm.parse(data)) if kind == "devicemanager" else _dra_doc(dra.parse(data))
    doc = {"file": str(args.file), "kind": kind, **doc}
    if args.json:
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        print()
    else:
        print(f"file: {args.file}\nkind: {_KIND_LABELS[kind]}")
        (_print_dm if kind == "devicemanager" else _print_dra)(doc)
    return 0


def _status(doc: dict[str, Any]) -> str:
    if doc["valid"]:
        return f"OK ({doc['computed_checksum']})"
    return f"MISMATCH / rejected: {doc['reason']}"


def _dm_doc(p: dm.ParsedCheckpoint) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": p.format,
        "format_label": p.label,
        "valid": p.valid,
        "reason": p.reason,
        "stored_checksum": p.stored_checksum,
        "computed_checksum": p.computed_checksum,
    }
    cp = p.checkpoint
    if cp is None:
        return doc
    doc["boot_id"] = cp.boot_id
    doc["registered_devices"] = cp.registered_devices
    doc["entries"] = None if cp.entries is None else [_entry_doc(e) for e in cp.entries]
    return doc


def _entry_doc(e: dm.PodDevicesEntry) -> dict[str, Any]:
    ids = e.device_ids
    out: dict[str, Any] = {
        "pod_uid": e.pod_uid,
        "container_name": e.container_name,
        "resource_name": e.resource_name,
        # JSON object keys must be strings; NUMA nodes stay in numeric order.
        "device_ids": {str(k): ids[k] for k in sorted(ids)} if isinstance(ids, dict) else ids,
        "alloc_resp_base64": None if e.alloc_resp is None else base64.b64encode(e.alloc_resp).decode(),
    }
    try:
        out["alloc_resp"] = dataclasses.asdict(allocresp.decode_alloc_resp(e.alloc_resp))
    except allocresp.ProtoError as exc:
        out["alloc_resp"] = None
        out["alloc_resp_error"] = f"{exc} (the kubelet skips this entry)"
    return out


def _ids(ids: list[str] | None) -> str:
    return "(null)" if ids is None else " ".join(ids) if ids else "(empty)"


def _print_dm(doc: dict[str, Any]) -> None:
    print(f"format: {doc['format_label']}\nchecksum: {_status(doc)}")
    if "entries" not in doc:
        return
    if doc["boot_id"]:
        print(f"boot id: {doc['boot_id']}")
    reg = doc["registered_devices"]
    print("registered devices:" + (" (null)" if reg is None else " (none)" if not reg else ""))
    for res in sorted(reg or {}, key=lambda s: s.encode()):
        print(f"  {res}: {_ids(reg[res])}")
    entries = doc["entries"]
    print(f"entries: {'(null)' if entries is None else len(entries)}")
    for e in entries or []:
        print(f"  pod {e['pod_uid']}  container {e['container_name']}  resource {e['resource_name']}")
        ids = e["device_ids"]
        if isinstance(ids, dict):
            for node, devs in ids.items():
                where = "no NUMA affinity" if node == str(dm.NO_TOPOLOGY) else f"NUMA {node}"
                print(f"    devices ({where}): {_ids(devs)}")
            if not ids:
                print("    devices: (empty map)")
        else:
            print(f"    devices: {_ids(ids)}")
        _print_alloc(e)


def _print_alloc(e: dict[str, Any]) -> None:
    if "alloc_resp_error" in e:
        print(f"    alloc_resp: does not decode: {e['alloc_resp_error']}")
        return
    if e["alloc_resp_base64"] is None:
        print("    alloc_resp: (null)")
    r = e["alloc_resp"]
    for k, v in r["envs"].items():
        print(f"    env {k}={v}")
    for m in r["mounts"]:
        print(f"    mount {m['host_path']} -> {m['container_path']}{' (ro)' if m['read_only'] else ''}")
    for d in r["devices"]:
        print(f"    device {d['host_path']} -> {d['container_path']} ({d['permissions'] or 'no permissions'})")
    for k, v in r["annotations"].items():
        print(f"    annotation {k}={v}")
    for name in r["cdi_devices"]:
        print(f"    cdi device {name}")


def _dra_doc(p: dra.ParsedDRA) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "format": p.format,
        "format_label": p.label,
        "valid": p.valid,
        "reason": p.reason,
        "stored_checksum": p.stored_checksum,
        "computed_checksum": p.computed_checksum,
    }
    if p.format == "v1":
        doc["claims"] = (
            None if p.state is None or p.state.entries is None else [dataclasses.asdict(c) for c in p.state.entries]
        )
    else:
        doc["layout"] = p.variant
        doc["claims"] = None if p.legacy_entries is None else [dataclasses.asdict(c) for c in p.legacy_entries]
    return doc


def _print_dra(doc: dict[str, Any]) -> None:
    print(f"format: {doc['format_label']}\nchecksum: {_status(doc)}")
    claims = doc.get("claims")
    print(f"claims: {'(null)' if claims is None else len(claims)}")
    for c in claims or []:
        print(f"  claim {c.get('namespace') or '-'}/{c.get('claim_name') or '-'}  uid {c['claim_uid']}")
        print(f"    pods: {_ids(c['pod_uids'])}")
        if "drivers" in c:
            for driver, devices in (c["drivers"] or {}).items():
                print(f"    driver {driver}:" + (" (null)" if devices is None else ""))
                for d in devices or []:
                    share = f" share {d['share_id']}" if d["share_id"] else ""
                    print(
                        f"      device {d['pool_name']}/{d['device_name']}{share}"
                        f"  requests {_ids(d['request_names'])}  cdi {_ids(d['cdi_device_ids'])}"
                    )
        else:
            print(f"    driver {c['driver_name']}  class {c['class_name'] or '-'}")
            for driver, ids in (c["cdi_devices"] or {}).items():
                print(f"    cdi {driver}: {_ids(ids)}")


# ---------------------------------------------------------------------------------------------
# forge


def cmd_forge(args: argparse.Namespace) -> int:
    spec = _load_spec(args.spec) if args.spec else {}
    kind = args.kind or spec.get("kind", "devicemanager")
    if kind == "dra":
        data = _forge_dra(spec, args.bad_checksum)
        label = dra.FORMAT_LABELS["v1"]
    elif kind == "devicemanager":
        fmt = args.format or spec.get("format", "v2")
        if fmt not in ("v1", "v2"):
            raise BadInput(f"spec format {fmt!r} is not v1 or v2", "set format: v2 (1.20+) or v1 (pre-1.20)")
        data = _forge_dm(spec, args, fmt)
        label = dm.FORMAT_LABELS[fmt]
    else:
        raise BadInput(f"spec kind {kind!r} is unknown", "use kind: devicemanager or kind: dra")
    args.output.write_bytes(data)
    os.chmod(args.output, 0o600)  # what the kubelet's file store leaves
    note = " (deliberately wrong checksum)" if args.bad_checksum else ""
    print(f"wrote {args.output}: {label}, {len(data)} bytes{note}")
    return 0


def _load_spec(path: Path) -> dict[str, Any]:
    text = _read(path).decode("utf-8", errors="replace")
    try:
        spec = yaml.safe_load(text)  # YAML is a superset of JSON
    except yaml.YAMLError as exc:
        raise BadInput(f"{path} is not JSON or YAML: {exc}".replace("\n", " "), "fix the spec's syntax") from None
    if not isinstance(spec, dict):
        raise BadInput(f"{path} must hold a mapping", "write e.g. 'entries: [...]' and 'registered_devices: {...}'")
    return spec


def _parse_entry(text: str, numa: int) -> dm.PodDevicesEntry:
    m = re.fullmatch(r"([^:]+):([^:]+):([^=]+)=(.*)", text)
    if not m:
        raise BadInput(
            f"--entry {text!r} is not POD:CONTAINER:RESOURCE=DEV,...",
            "e.g. --entry pod-uid-1:ctr:example.com/dev=dev0,dev1@1",
        )
    per_numa: dict[int, list[str]] = {}
    for dev in filter(None, m.group(4).split(",")):
        name, _, node = dev.rpartition("@") if "@" in dev else (dev, "", str(numa))
        if not re.fullmatch(r"-?\d+", node):
            raise BadInput(
                f"--entry device {dev!r}: NUMA node {node!r} is not an integer", "write DEV@0, DEV@1 or DEV@-1"
            )
        per_numa.setdefault(int(node), []).append(name)
    # AllocResp b"": what a kubelet stores for a plugin that returned an empty response
    return dm.PodDevicesEntry(m.group(1), m.group(2), m.group(3), dict(per_numa), b"")


def _spec_entry(raw: Any) -> dm.PodDevicesEntry:
    if not isinstance(raw, dict):
        raise BadInput(f"spec entry {raw!r} is not a mapping", "give pod_uid, container, resource, devices")
    devices = raw.get("devices", {})
    try:
        ids: Any = (
            [str(d) for d in devices]
            if isinstance(devices, list)
            else (None if devices is None else {int(k): v for k, v in devices.items()})
        )
    except (TypeError, ValueError, AttributeError):
        raise BadInput(
            f"spec entry devices {devices!r} is neither a list nor a NUMA map",
            "write devices: [dev0] or devices: {0: [dev0], 1: [dev1]}",
        ) from None
    if "alloc_resp" in raw:
        alloc = None if raw["alloc_resp"] is None else base64.b64decode(raw["alloc_resp"])
    else:
        alloc = allocresp.encode_alloc_resp(
            allocresp.ContainerAllocateResponse(
                envs={str(k): str(v) for k, v in (raw.get("envs") or {}).items()},
                mounts=[_mount(m) for m in raw.get("mounts") or []],
                annotations={str(k): str(v) for k, v in (raw.get("annotations") or {}).items()},
                cdi_devices=[str(c) for c in raw.get("cdi_devices") or []],
            )
        )
    try:
        return dm.PodDevicesEntry(
            str(raw["pod_uid"]),
            str(raw.get("container", raw.get("container_name", ""))),
            str(raw.get("resource", raw.get("resource_name", ""))),
            ids,
            alloc,
        )
    except KeyError as exc:
        raise BadInput(f"spec entry {raw!r} has no {exc}", "every entry needs pod_uid") from None


def _mount(raw: Any) -> allocresp.Mount:
    try:
        return allocresp.Mount(**raw)
    except TypeError:
        raise BadInput(
            f"spec mount {raw!r} is not container_path/host_path/read_only",
            "write mounts: [{container_path: /dev/x, host_path: /dev/x, read_only: true}]",
        ) from None


def _forge_dm(spec: dict[str, Any], args: argparse.Namespace, fmt: dm.Format) -> bytes:
    entries = [_spec_entry(e) for e in spec.get("entries") or []]
    entries += [_parse_entry(e, args.numa) for e in args.entry]
    entries = [e.as_v2() if fmt == "v2" else e.as_v1() for e in entries]
    registered = spec.get("registered_devices")
    if registered is None:  # default: every device named in an entry, per resource
        registered = {}
        for e in entries:
            known = registered.setdefault(e.resource_name, [])
            known += [d for d in e.devices() if d not in known]
    boot_id = args.boot_id if args.boot_id is not None else str(spec.get("boot_id") or "")
    cp = dm.Checkpoint(entries, registered, boot_id if fmt == "v2" else "")
    if fmt == "v1" and boot_id:
        raise BadInput("v1 checkpoints have no BootID", "drop --boot-id / boot_id or use --format v2")
    checksum = (dm.compute_checksum(cp, fmt) + 1) % (1 << 32) if args.bad_checksum else None
    return dm.encode(cp, fmt, checksum=checksum)


def _forge_dra(spec: dict[str, Any], bad_checksum: bool) -> bytes:
    claims = []
    try:
        for c in spec.get("claims") or []:
            drivers = {
                driver: [
                    dra.Device(
                        str(d["pool"]),
                        str(d["device"]),
                        d.get("request_names"),
                        d.get("cdi_device_ids"),
                        d.get("share_id"),
                    )
                    for d in devices or []
                ]
                for driver, devices in (c.get("drivers") or {}).items()
            }
            claims.append(
                dra.ClaimInfoState(
                    str(c["claim_uid"]),
                    str(c.get("claim_name", "")),
                    str(c.get("namespace", "")),
                    [str(u) for u in c.get("pod_uids") or []],
                    drivers,
                )
            )
    except (KeyError, TypeError, AttributeError) as exc:
        raise BadInput(
            f"DRA spec claim is incomplete or mis-shaped ({exc!r})",
            "each claim needs claim_uid and drivers: {driver: [{pool: p, device: d}]}",
        ) from None
    share = bool(spec.get("share_id_field", False))
    try:
        text = dra.encode_data(dra.DRAState(claims), share_id_field=share)
    except ValueError as exc:
        raise BadInput(str(exc), "add share_id_field: true to the spec (1.35+ kubelets)") from None
    checksum = (dra.crc32_checksum(text) + 1) % (1 << 32) if bad_checksum else None
    return dra.encode(data=text, checksum=checksum)
