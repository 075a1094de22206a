"""`device-conformance checkpoint show FILE [--json]`: entries, devices per NUMA node, env/mounts."""

from __future__ import annotations

import argparse
import base64
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from device_conformance.cli.checkpoint.files import KIND_LABELS, add_kind, detect_kind, id_list, read
from device_conformance.kubelet_state import allocresp, dra, drahealth
from device_conformance.kubelet_state import devicemanager as dm


def add_parser(verbs: argparse._SubParsersAction) -> None:
    s = verbs.add_parser("show", help="dump a checkpoint: entries, devices per NUMA node, env/mounts")
    s.add_argument("file", type=Path)
    s.add_argument("--json", action="store_true", help="machine-readable output")
    add_kind(s)
    s.set_defaults(func=cmd_show)


def cmd_show(args: argparse.Namespace) -> int:
    data = read(args.file)
    kind = detect_kind(args.file, data, args.kind)
    if kind == "devicemanager":
        doc = _dm_doc(dm.parse(data))
    elif kind == "dra":
        doc = _dra_doc(dra.parse(data))
    else:
        doc = _health_doc(drahealth.parse(data))
    doc = {"file": str(args.file), "kind": kind, **doc}
    if args.json:
        json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
        print()
    else:
        print(f"file: {args.file}\nkind: {KIND_LABELS[kind]}")
        {"devicemanager": _print_dm, "dra": _print_dra, "drahealth": _print_health}[kind](doc)
    return 0


def _status(doc: dict[str, Any]) -> str:
    if doc["valid"]:
        return f"OK ({doc['computed_checksum']})"
    return f"MISMATCH / rejected: {doc['reason']}"


def _validity(p: dm.ParsedCheckpoint | dra.ParsedDRA | drahealth.ParsedHealth) -> dict[str, Any]:
    """What both checkpoint kinds report first: the format and whether the kubelet would accept the file."""
    return {
        "format": p.format,
        "format_label": p.label,
        "valid": p.valid,
        "reason": p.reason,
        "stored_checksum": p.stored_checksum,
        "computed_checksum": p.computed_checksum,
    }


def _dm_doc(p: dm.ParsedCheckpoint) -> dict[str, Any]:
    doc = _validity(p)
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


def _print_dm(doc: dict[str, Any]) -> None:
    print(f"format: {doc['format_label']}\nchecksum: {_status(doc)}")
    if "entries" not in doc:
        return
    if doc["boot_id"]:
        print(f"boot id: {doc['boot_id']}")
    reg = doc["registered_devices"]
    print("registered devices:" + (" (null)" if reg is None else " (none)" if not reg else ""))
    for res in sorted(reg or {}, key=lambda s: s.encode()):
        print(f"  {res}: {id_list(reg[res])}")
    entries = doc["entries"]
    print(f"entries: {'(null)' if entries is None else len(entries)}")
    for e in entries or []:
        print(f"  pod {e['pod_uid']}  container {e['container_name']}  resource {e['resource_name']}")
        ids = e["device_ids"]
        if isinstance(ids, dict):
            for node, devs in ids.items():
                where = "no NUMA affinity" if node == str(dm.NO_TOPOLOGY) else f"NUMA {node}"
                print(f"    devices ({where}): {id_list(devs)}")
            if not ids:
                print("    devices: (empty map)")
        else:
            print(f"    devices: {id_list(ids)}")
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
    doc = _validity(p)
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
        print(f"    pods: {id_list(c['pod_uids'])}")
        if "drivers" in c:
            for driver, devices in (c["drivers"] or {}).items():
                print(f"    driver {driver}:" + (" (null)" if devices is None else ""))
                for d in devices or []:
                    share = f" share {d['share_id']}" if d["share_id"] else ""
                    print(
                        f"      device {d['pool_name']}/{d['device_name']}{share}"
                        f"  requests {id_list(d['request_names'])}  cdi {id_list(d['cdi_device_ids'])}"
                    )
        else:
            print(f"    driver {c['driver_name']}  class {c['class_name'] or '-'}")
            for driver, ids in (c["cdi_devices"] or {}).items():
                print(f"    cdi {driver}: {id_list(ids)}")


def _health_doc(p: drahealth.ParsedHealth) -> dict[str, Any]:
    doc = _validity(p)
    doc["drivers"] = (
        None
        if p.state is None
        else {
            driver: None if devices is None else {key: dataclasses.asdict(d) for key, d in devices.items()}
            for driver, devices in p.state.items()
        }
    )
    return doc


def _print_health(doc: dict[str, Any]) -> None:
    loads = "loads" if doc["valid"] else f"does not load: {doc['reason']}"
    print(f"format: {doc['format_label']}\nchecksum: none (the kubelet writes none)\nkubelet: {loads}")
    drivers = doc["drivers"]
    print(f"drivers: {'(unreadable)' if drivers is None else len(drivers)}")
    for driver in sorted(drivers or {}, key=lambda s: s.encode()):
        devices = drivers[driver]
        print(f"  driver {driver}:" + (" (null)" if devices is None else "" if devices else " (no devices)"))
        for key in sorted(devices or {}, key=lambda s: s.encode()):
            d = devices[key]
            timeout = d["health_check_timeout_ns"]
            after = f"{timeout / 1e9:g}s" if timeout else f"{drahealth.DEFAULT_HEALTH_TIMEOUT_NS / 1e9:g}s (default)"
            message = f"  message {d['message']!r}" if d["message"] else ""
            print(f"    device {key}: {d['health']}  updated {d['last_updated']}  unknown after {after}{message}")
