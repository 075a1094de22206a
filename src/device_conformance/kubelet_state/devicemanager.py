"""The device manager's checkpoint, ``/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint``.

Reads a file the way the kubelet's Go code does (pkg/kubelet/cm/devicemanager/checkpoint), computes the
checksum it would compute (FNV-1a-32 over go-spew ``%#v`` of ``Data``;
pkg/kubelet/checkpointmanager/checksum), and writes files byte for byte like a
kubelet's ``json.Marshal``. Two on-disk formats:

- V2 (1.20+): ``DeviceIDs`` is a map NUMA node -> IDs (``checkpoint.DevicesPerNUMA``);
- V1 (1.11-1.19): ``DeviceIDs`` is a flat list; hashed with the 1.19 type names.

``AllocResp`` is each container's protobuf ``v1beta1.ContainerAllocateResponse``, kept here as raw
bytes; ``allocresp`` decodes and encodes them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from device_conformance.kubelet_state.gojson import go_json_decode, go_json_encode
from device_conformance.kubelet_state.gospew import fnv1a_32, spew
from device_conformance.kubelet_state.gotypes import (
    INT64,
    STRING,
    STRING_SLICE,
    Bytes,
    Field,
    Map,
    Scalar,
    Slice,
    Struct,
)

FILE_NAME = "kubelet_internal_checkpoint"
DEFAULT_PATH = "/var/lib/kubelet/device-plugins/" + FILE_NAME
NO_TOPOLOGY = -1  # the NUMA key of devices that reported no topology

Format = Literal["v1", "v2"]
FORMAT_LABELS: dict[str, str] = {"v2": "v2 (1.20+)", "v1": "v1 (pre-1.20)"}

# ---------------------------------------------------------------------------------------------
# The kubelet's Go types, by their exact package and type names (they enter the hash).

_REGISTERED = Map("map[string][]string", STRING, STRING_SLICE)
_DEVICES_PER_NUMA = Map("checkpoint.DevicesPerNUMA", INT64, STRING_SLICE)
_CHECKSUM = Scalar("checksum.Checksum", "uint", 64)


def _entry_type(name: str, device_ids: Slice | Map) -> Struct:
    return Struct(
        name,
        (
            Field("PodUID", STRING),
            Field("ContainerName", STRING),
            Field("ResourceName", STRING),
            Field("DeviceIDs", device_ids),
            Field("AllocResp", Bytes()),
        ),
    )


_ENTRY_V2 = _entry_type("checkpoint.PodDevicesEntry", _DEVICES_PER_NUMA)
_ENTRY_V1 = _entry_type("checkpoint.PodDevicesEntryV1", STRING_SLICE)
DATA_V2 = Struct(
    "checkpoint.checkpointData",
    (
        Field("PodDeviceEntries", Slice("[]checkpoint.PodDevicesEntry", _ENTRY_V2)),
        Field("RegisteredDevices", _REGISTERED),
    ),
)
DATA_V1 = Struct(
    "checkpoint.checkpointDataV1",
    (
        Field("PodDeviceEntries", Slice("[]checkpoint.PodDevicesEntryV1", _ENTRY_V1)),
        Field("RegisteredDevices", _REGISTERED),
    ),
)
# BootID (1.37+ dev) sits outside Data, so it never enters the checksum; older kubelets ignore it.
_FILE_V2 = Struct(
    "checkpoint.Data",
    (Field("Data", DATA_V2), Field("Checksum", _CHECKSUM), Field("BootID", STRING, omitempty=True)),
)
_FILE_V1 = Struct("checkpoint.DataV1", (Field("Data", DATA_V1), Field("Checksum", _CHECKSUM)))


# ---------------------------------------------------------------------------------------------
# Model


@dataclass
class PodDevicesEntry:
    """One container's allocation of one resource.

    ``device_ids`` is a NUMA node -> IDs map in V2 and a flat list in V1; ``None`` is JSON null
    (Go nil), which hashes differently from an empty map/list. ``alloc_resp`` likewise: ``None``
    is null, ``b""`` is ``""``.
    """

    pod_uid: str
    container_name: str
    resource_name: str
    device_ids: dict[int, list[str] | None] | list[str] | None = None
    alloc_resp: bytes | None = None

    def devices(self) -> list[str]:
        """All device IDs, each once, NUMA nodes in numeric order. The kubelet records a device under every NUMA
        node of its topology (pkg/kubelet/cm/devicemanager/manager.go allocateContainerResources,
        allocDevicesWithNUMA), so a device on two nodes is in two lists."""
        if isinstance(self.device_ids, dict):
            listed = [d for node in sorted(self.device_ids) for d in (self.device_ids[node] or [])]
            return list(dict.fromkeys(listed))
        return list(self.device_ids or [])

    def as_v2(self) -> PodDevicesEntry:
        """The V2 form; a flat list goes to NUMA node 0, as the kubelet converts V1 data."""
        if isinstance(self.device_ids, list):
            return PodDevicesEntry(
                self.pod_uid, self.container_name, self.resource_name, {0: list(self.device_ids)}, self.alloc_resp
            )
        return self

    def as_v1(self) -> PodDevicesEntry:
        """The V1 form; a per-NUMA map is flattened in numeric NUMA order."""
        if isinstance(self.device_ids, dict):
            return PodDevicesEntry(
                self.pod_uid, self.container_name, self.resource_name, self.devices(), self.alloc_resp
            )
        return self


@dataclass
class Checkpoint:
    """``Data`` of the file plus the top-level BootID. ``None`` lists/maps are JSON null."""

    entries: list[PodDevicesEntry] | None = field(default_factory=list)
    registered_devices: dict[str, list[str] | None] | None = field(default_factory=dict)
    boot_id: str = ""


def _to_go(cp: Checkpoint, fmt: Format) -> dict[str, Any]:
    entries = None
    if cp.entries is not None:
        entries = []
        for e in cp.entries:
            if fmt == "v2" and isinstance(e.device_ids, list):
                raise ValueError(
                    f"entry {e.pod_uid}/{e.container_name}: a flat DeviceIDs list is V1; "
                    "give a {numa_node: [ids]} map (or call entry.as_v2())"
                )
            if fmt == "v1" and isinstance(e.device_ids, dict):
                raise ValueError(
                    f"entry {e.pod_uid}/{e.container_name}: a per-NUMA DeviceIDs map is V2; "
                    "give a flat list (or call entry.as_v1())"
                )
            entries.append(
                {
                    "PodUID": e.pod_uid,
                    "ContainerName": e.container_name,
                    "ResourceName": e.resource_name,
                    "DeviceIDs": e.device_ids,
                    "AllocResp": e.alloc_resp,
                }
            )
    return {"PodDeviceEntries": entries, "RegisteredDevices": cp.registered_devices}


def _from_go(data: dict[str, Any], boot_id: str = "") -> Checkpoint:
    entries = None
    if data["PodDeviceEntries"] is not None:
        entries = [
            PodDevicesEntry(e["PodUID"], e["ContainerName"], e["ResourceName"], e["DeviceIDs"], e["AllocResp"])
            for e in data["PodDeviceEntries"]
        ]
    return Checkpoint(entries, data["RegisteredDevices"], boot_id)


# ---------------------------------------------------------------------------------------------
# Checksums


def hashed_string(cp: Checkpoint, fmt: Format = "v2") -> str:
    """The exact string the kubelet feeds to FNV-1a for this data."""
    if fmt == "v2":
        return spew(DATA_V2, _to_go(cp, "v2"))
    # checkpointv1.go: spew the V1 types, then rename to the 1.19 type names. The replacement is
    # plain text, so it also rewrites these words inside pod UIDs or device IDs, as Go does.
    s = spew(DATA_V1, _to_go(cp, "v1"))
    return s.replace("checkpointDataV1", "checkpointData", 1).replace("PodDevicesEntryV1", "PodDevicesEntry")


def compute_checksum(cp: Checkpoint, fmt: Format = "v2") -> int:
    """The checksum a kubelet computes (and expects in the file) for this data."""
    return fnv1a_32(hashed_string(cp, fmt).encode("utf-8"))


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class _Reading:
    """One Go reader's view of the file (the V2 reader or the V1 reader)."""

    checkpoint: Checkpoint
    stored: int
    computed: int | None  # None when json.Unmarshal failed
    error: str | None
    hashed: str | None

    @property
    def ok(self) -> bool:
        return self.error is None and self.computed == self.stored


def _read(data: bytes, fmt: Format) -> _Reading:
    # The kubelet pre-initialises empty non-nil entries and registered devices, then unmarshals.
    file_type = _FILE_V2 if fmt == "v2" else _FILE_V1
    initial: dict[str, Any] = {"Data": {"PodDeviceEntries": [], "RegisteredDevices": {}}, "Checksum": 0}
    if fmt == "v2":
        initial["BootID"] = ""
    value, error = go_json_decode(file_type, data, initial)
    cp = _from_go(value["Data"], value.get("BootID", ""))
    if error is not None:
        return _Reading(cp, value["Checksum"], None, error, None)
    hashed = hashed_string(cp, fmt)
    return _Reading(cp, value["Checksum"], fnv1a_32(hashed.encode("utf-8")), None, hashed)


@dataclass(frozen=True)
class ParsedCheckpoint:
    """What a kubelet would make of a checkpoint file.

    ``format`` is the format the file is in (the one whose reader accepts it, else the one its
    shape says; None when it is not JSON). ``checkpoint`` is what that reader decoded (partial
    after a type error). ``reason`` says why a kubelet rejects it.
    """

    format: Format | None
    checkpoint: Checkpoint | None
    stored_checksum: int | None
    computed_checksum: int | None
    valid: bool
    reason: str | None
    hashed: str | None
    v2_ok: bool
    v1_ok: bool

    @property
    def label(self) -> str:
        return FORMAT_LABELS.get(self.format or "", "unknown")

    def readable_by(self, minor: int) -> bool:
        """Whether a kubelet 1.<minor> restores this file (PRs #102882, #106253, #123398)."""
        if minor <= 19:
            return self.v1_ok
        if minor <= 22:
            # 1.22 patch releases with the backport of #102882 (#106253) also fall back to V1.
            return self.v2_ok
        if minor <= 29:
            return self.v2_ok or self.v1_ok
        return self.v2_ok  # 1.30 (#123398) dropped the V1 fallback


_V1_SHAPE_ERROR = (
    "cannot unmarshal array into Go struct field PodDevicesEntry.Data.PodDeviceEntries."
    "DeviceIDs of type checkpoint.DevicesPerNUMA"
)


def parse(data: bytes) -> ParsedCheckpoint:
    """Read a checkpoint file's bytes as the kubelet does: V2 first, then V1 (1.23-1.29 order)."""
    v2, v1 = _read(data, "v2"), _read(data, "v1")
    if v2.error and v2.error.startswith("invalid JSON"):
        return ParsedCheckpoint(None, None, None, None, False, v2.error, None, False, False)
    fmt: Format
    if v2.ok or v1.ok:
        fmt = "v2" if v2.ok else "v1"
    elif (v2.error and not v1.error) or _V1_SHAPE_ERROR in (v2.error or ""):
        fmt = "v1"  # a flat DeviceIDs list: only the V1 reader gets through it
    else:
        fmt = "v2"
    chosen = v2 if fmt == "v2" else v1
    if chosen.ok:
        reason = None
    elif chosen.error:
        reason = chosen.error
    else:
        reason = (
            f"checksum mismatch: file says {chosen.stored}, data hashes to {chosen.computed} "
            "(the kubelet reports 'checkpoint is corrupted')"
        )
    return ParsedCheckpoint(
        fmt, chosen.checkpoint, chosen.stored, chosen.computed, chosen.ok, reason, chosen.hashed, v2.ok, v1.ok
    )


# ---------------------------------------------------------------------------------------------
# Writing and forging


def encode_v2(cp: Checkpoint, *, checksum: int | None = None) -> bytes:
    """The file a 1.20+ kubelet writes for ``cp``; ``checksum`` overrides the correct one."""
    data = _to_go(cp, "v2")
    ck = compute_checksum(cp, "v2") if checksum is None else checksum
    return go_json_encode(_FILE_V2, {"Data": data, "Checksum": ck, "BootID": cp.boot_id})


def encode_v1(cp: Checkpoint, *, checksum: int | None = None) -> bytes:
    """The file a 1.11-1.19 kubelet writes for ``cp``; ``checksum`` overrides the correct one."""
    if cp.boot_id:
        raise ValueError("V1 checkpoints have no BootID; leave boot_id empty")
    data = _to_go(cp, "v1")
    ck = compute_checksum(cp, "v1") if checksum is None else checksum
    return go_json_encode(_FILE_V1, {"Data": data, "Checksum": ck})


def encode(cp: Checkpoint, fmt: Format = "v2", *, checksum: int | None = None) -> bytes:
    return encode_v2(cp, checksum=checksum) if fmt == "v2" else encode_v1(cp, checksum=checksum)


_CHECKSUM_LITERAL = re.compile(rb'"checksum"\s*:\s*(-?[0-9][0-9.eE+-]*)', re.IGNORECASE)


def with_checksum(data: bytes, checksum: int) -> bytes:
    """The same bytes with the stored checksum replaced (the last top-level "Checksum" key).

    Works on kubelet-written files (device manager and DRA): no other key of theirs can be
    called Checksum, and quotes inside strings are escaped, so the last match is the real one.
    """
    matches = list(_CHECKSUM_LITERAL.finditer(data))
    if not matches:
        raise ValueError('no "Checksum": <number> in the data')
    m = matches[-1]
    return data[: m.start(1)] + str(checksum).encode() + data[m.end(1) :]


CorruptKind = Literal["checksum", "truncate", "not-json", "empty"]


def corrupt(data: bytes, kind: CorruptKind = "checksum") -> bytes:
    """A broken copy of a checkpoint that a kubelet must refuse (and then start empty).

    checksum: valid JSON, wrong checksum; truncate: cut in the middle (a torn write);
    not-json: garbage; empty: a zero-length file.
    """
    if kind == "checksum":
        parsed = parse(data)
        if parsed.computed_checksum is None:
            raise ValueError(f"cannot re-checksum data the kubelet cannot decode: {parsed.reason}")
        return with_checksum(data, (parsed.computed_checksum + 1) % (1 << 32))
    if kind == "truncate":
        return data[: len(data) // 2]
    if kind == "not-json":
        return b"this is not a checkpoint\n"
    if kind == "empty":
        return b""
    raise ValueError(f"unknown corruption {kind!r}; use one of checksum, truncate, not-json, empty")
