"""`device-conformance checkpoint forge -o FILE`: write a checkpoint byte for byte as a kubelet would."""

from __future__ import annotations

import argparse
import base64
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from device_conformance.cli.checkpoint.files import add_kind, read
from device_conformance.core.errors import BadInput
from device_conformance.kubelet_state import allocresp, dra, drahealth
from device_conformance.kubelet_state import devicemanager as dm

FORGE_SPEC_HELP = """\
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
spec (DRA health cache, dra_health_state, 1.36+; no checksum):
  kind: drahealth
  drivers:
    gpu.example.com:
      - {pool: p, device: gpu-0, health: Unhealthy, message: "ECC errors",
         last_updated: "2026-11-28T02:46:18.387156622Z",   # default: now
         timeout_seconds: 30}                                # default 0: the kubelet's 30 s
"""


def add_parser(verbs: argparse._SubParsersAction) -> None:
    f = verbs.add_parser(
        "forge",
        help="write a checkpoint from a spec or flags",
        description="Write a checkpoint byte for byte as a kubelet would, from --entry flags and/or a JSON/YAML "
        "--spec.",
        epilog=FORGE_SPEC_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    f.add_argument("-o", "--output", type=Path, required=True, help="file to write")
    f.add_argument(
        "--spec",
        type=Path,
        help="JSON or YAML spec (entries/registered_devices, kind: dra + claims, or kind: drahealth + drivers)",
    )
    f.add_argument("--entry", action="append", default=[], metavar="POD:CONTAINER:RESOURCE=DEV[@NUMA],...")
    f.add_argument("--numa", type=int, default=0, help="NUMA node for devices without @NUMA (default 0; -1: none)")
    f.add_argument("--format", choices=["v2", "v1"], help="device-manager format (default v2, or the spec's)")
    f.add_argument("--boot-id", default=None, help="top-level BootID (v2 only; newest kubelets)")
    f.add_argument("--bad-checksum", action="store_true", help="store a wrong checksum on purpose")
    add_kind(f, auto=False)
    f.set_defaults(func=cmd_forge)


def cmd_forge(args: argparse.Namespace) -> int:
    spec = _load_spec(args.spec) if args.spec else {}
    kind = args.kind or spec.get("kind", "devicemanager")
    if kind == "dra":
        data = _forge_dra(spec, args.bad_checksum)
        label = dra.FORMAT_LABELS["v1"]
    elif kind == "drahealth":
        if args.bad_checksum:
            raise BadInput("dra_health_state has no checksum to get wrong", "drop --bad-checksum")
        data = _forge_health(spec)
        label = drahealth.LABEL
    elif kind == "devicemanager":
        fmt = args.format or spec.get("format", "v2")
        if fmt not in ("v1", "v2"):
            raise BadInput(f"spec format {fmt!r} is not v1 or v2", "set format: v2 (1.20+) or v1 (pre-1.20)")
        data = _forge_dm(spec, args, fmt)
        label = dm.FORMAT_LABELS[fmt]
    else:
        raise BadInput(f"spec kind {kind!r} is unknown", "use kind: devicemanager, kind: dra or kind: drahealth")
    args.output.write_bytes(data)
    os.chmod(args.output, 0o600)  # what the kubelet's file store leaves
    note = " (deliberately wrong checksum)" if args.bad_checksum else ""
    print(f"wrote {args.output}: {label}, {len(data)} bytes{note}")
    return 0


def _load_spec(path: Path) -> dict[str, Any]:
    text = read(path).decode("utf-8", errors="replace")
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


def _forge_health(spec: dict[str, Any]) -> bytes:
    """dra_health_state from a spec's drivers: name -> list of devices, keyed as the kubelet keys them."""
    now = drahealth.go_time(datetime.now(UTC))
    state: drahealth.HealthState = {}
    try:
        for driver, devices in (spec.get("drivers") or {}).items():
            if devices is None:
                state[str(driver)] = None
                continue
            entries = {}
            for d in devices:
                health = str(d.get("health", "Healthy"))
                if health not in drahealth.HEALTH_STATUSES:
                    raise BadInput(
                        f"DRA health spec: device {d['device']!r} has health {health!r}",
                        f"use one of {', '.join(drahealth.HEALTH_STATUSES)}",
                    )
                device = drahealth.DeviceHealth(
                    str(d["pool"]),
                    str(d["device"]),
                    health,
                    str(d.get("last_updated") or now),
                    round(float(d.get("timeout_seconds", 0)) * 1_000_000_000),
                    str(d.get("message", "")),
                )
                entries[device.key] = device
            state[str(driver)] = entries
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BadInput(
            f"DRA health spec is incomplete or mis-shaped ({exc!r})",
            "write drivers: {driver: [{pool: p, device: d, health: Healthy}]}",
        ) from None
    return drahealth.encode(state)
