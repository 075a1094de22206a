"""The DRA manager's checkpoint, ``/var/lib/kubelet/dra_manager_state`` (pkg/kubelet/cm/dra/state).

- 1.31+: ``{"Data":"<json string>","Checksum":<uint32>}`` with Checksum = CRC-32 (IEEE) of the
  Data string's bytes exactly as stored. Any read error is fatal for kubelet start.
- 1.26-1.30 ("legacy"): ``{"version":"v1","entries":[...],"checksum":N}`` with N = FNV-1a-32 of
  go-spew ``%#v`` of the ``*state.DRAManagerCheckpoint`` with checksum 0. Only verified here
  (against the 1.27/1.28 layout, which 1.29/1.30 also accept through their fallback); 1.31+
  kubelets do not read it.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, Literal

from device_conformance.kubelet_state.gojson import go_json_decode, go_json_encode, object_shape
from device_conformance.kubelet_state.gospew import spew_fnv
from device_conformance.kubelet_state.gotypes import (
    EMPTY_STRUCT,
    STRING,
    STRING_SLICE,
    UINT32,
    Field,
    Map,
    Pointer,
    Scalar,
    Slice,
    Struct,
)

FILE_NAME = "dra_manager_state"
DEFAULT_PATH = "/var/lib/kubelet/" + FILE_NAME
KIND = "DRACheckpoint"
API_VERSION = "checkpoint.dra.kubelet.k8s.io/v1"

DRAFormat = Literal["v1", "legacy"]
FORMAT_LABELS: dict[str, str] = {
    "v1": "dra v1 (1.31+, CRC-32 of Data)",
    "legacy": "dra legacy (1.26-1.30, FNV-1a over spew)",
}

# ---------------------------------------------------------------------------------------------
# Go types of the 1.31+ format

_UID = Scalar("types.UID", "string")
_SET = Map("sets.Set[string]", STRING, EMPTY_STRUCT)


def _device_type(share_id: bool) -> Struct:
    fields = [Field("PoolName", STRING), Field("DeviceName", STRING)]
    if share_id:  # 1.35+, a pointer without omitempty: null when unset
        fields.append(Field("ShareID", Pointer(_UID)))
    fields += [Field("RequestNames", STRING_SLICE), Field("CDIDeviceIDs", STRING_SLICE)]
    return Struct("state.Device", tuple(fields))


def _data_type(share_id: bool) -> Struct:
    driver_state = Struct("state.DriverState", (Field("Devices", Slice("[]state.Device", _device_type(share_id))),))
    claim = Struct(
        "state.ClaimInfoState",
        (
            Field("ClaimUID", _UID),
            Field("ClaimName", STRING),
            Field("Namespace", STRING),
            Field("PodUIDs", _SET),
            Field("DriverState", Map("map[string]state.DriverState", STRING, driver_state)),
        ),
    )
    # metav1.TypeMeta is embedded, so its tagged fields sit at the top level of the JSON.
    return Struct(
        "state.CheckpointData",
        (
            Field("Kind", STRING, json="kind", omitempty=True),
            Field("APIVersion", STRING, json="apiVersion", omitempty=True),
            Field("ClaimInfoStateList", Slice("state.ClaimInfoStateList", claim)),
        ),
    )


_DATA_131 = _data_type(share_id=False)
_DATA_135 = _data_type(share_id=True)
_OUTER = Struct("state.Checkpoint", (Field("Data", STRING), Field("Checksum", UINT32)))

# ---------------------------------------------------------------------------------------------
# Model


@dataclass
class Device:
    """A device a driver prepared for a claim. ``None`` lists are JSON null."""

    pool_name: str
    device_name: str
    request_names: list[str] | None = None
    cdi_device_ids: list[str] | None = None
    share_id: str | None = None  # 1.35+ (consumable capacity); written only with share_id_field


@dataclass
class ClaimInfoState:
    """One prepared claim. ``drivers`` is DriverState: driver name -> its devices."""

    claim_uid: str
    claim_name: str = ""
    namespace: str = ""
    pod_uids: list[str] | None = field(default_factory=list)
    drivers: dict[str, list[Device] | None] | None = field(default_factory=dict)


@dataclass
class DRAState:
    """The decoded Data string of a 1.31+ checkpoint."""

    entries: list[ClaimInfoState] | None = None
    kind: str = KIND
    api_version: str = API_VERSION


def _state_to_go(state: DRAState) -> dict[str, Any]:
    entries = None
    if state.entries is not None:
        entries = [
            {
                "ClaimUID": c.claim_uid,
                "ClaimName": c.claim_name,
                "Namespace": c.namespace,
                "PodUIDs": None if c.pod_uids is None else {u: {} for u in c.pod_uids},
                "DriverState": None
                if c.drivers is None
                else {
                    name: {"Devices": None if devs is None else [_device_to_go(d) for d in devs]}
                    for name, devs in c.drivers.items()
                },
            }
            for c in state.entries
        ]
    return {"Kind": state.kind, "APIVersion": state.api_version, "ClaimInfoStateList": entries}


def _device_to_go(d: Device) -> dict[str, Any]:
    return {
        "PoolName": d.pool_name,
        "DeviceName": d.device_name,
        "ShareID": d.share_id,
        "RequestNames": d.request_names,
        "CDIDeviceIDs": d.cdi_device_ids,
    }


def _state_from_go(v: dict[str, Any]) -> DRAState:
    entries = None
    if v["ClaimInfoStateList"] is not None:
        entries = []
        for c in v["ClaimInfoStateList"]:
            drivers = None
            if c["DriverState"] is not None:
                drivers = {
                    name: None
                    if ds["Devices"] is None
                    else [
                        Device(d["PoolName"], d["DeviceName"], d["RequestNames"], d["CDIDeviceIDs"], d["ShareID"])
                        for d in ds["Devices"]
                    ]
                    for name, ds in c["DriverState"].items()
                }
            pods = None if c["PodUIDs"] is None else sorted(c["PodUIDs"], key=lambda s: s.encode("utf-8"))
            entries.append(ClaimInfoState(c["ClaimUID"], c["ClaimName"], c["Namespace"], pods, drivers))
    return DRAState(entries, v["Kind"], v["APIVersion"])


def crc32_checksum(data: str) -> int:
    """The 1.31+ checksum: CRC-32 IEEE of the Data string's UTF-8 bytes."""
    return zlib.crc32(data.encode("utf-8"))


def encode_data(state: DRAState, *, share_id_field: bool = False) -> str:
    """The Data string a kubelet writes (json.Marshal of CheckpointData).

    ``share_id_field`` adds Device.ShareID as 1.35+ kubelets write it; older kubelets ignore it.
    """
    if not share_id_field and any(
        d.share_id is not None for c in state.entries or [] for devs in (c.drivers or {}).values() for d in devs or []
    ):
        raise ValueError("a device has share_id set; pass share_id_field=True (1.35+ format)")
    t = _DATA_135 if share_id_field else _DATA_131
    return go_json_encode(t, _state_to_go(state)).decode("utf-8")


def encode(
    state: DRAState | None = None, *, share_id_field: bool = False, checksum: int | None = None, data: str | None = None
) -> bytes:
    """A 1.31+ ``dra_manager_state`` file. ``data`` overrides the Data string verbatim (any JSON
    the kubelet should see); ``checksum`` overrides the correct CRC-32."""
    if data is None:
        data = encode_data(state or DRAState(), share_id_field=share_id_field)
    ck = crc32_checksum(data) if checksum is None else checksum
    return go_json_encode(_OUTER, {"Data": data, "Checksum": ck})


EMPTY_DATA = encode_data(DRAState())  # what NewCheckpoint(nil) holds before a file is read

# ---------------------------------------------------------------------------------------------
# Legacy (1.26-1.30) format

_CHECKSUM = Scalar("checksum.Checksum", "uint", 64)
_CDI = Map("map[string][]string", STRING, STRING_SLICE)
# Reconstructed v1alpha2.ResourceHandle of 1.29 (driverName, data): not checked against a real
# 1.29 kubelet, only against go-spew with the same declarations.
_HANDLE = Struct(
    "v1alpha2.ResourceHandle",
    (
        Field("DriverName", STRING, json="driverName", omitempty=True),
        Field("Data", STRING, json="data", omitempty=True),
    ),
)


def _legacy_type(with_handles: bool) -> Struct:
    fields = [
        Field("DriverName", STRING),
        Field("ClassName", STRING),
        Field("ClaimUID", _UID),
        Field("ClaimName", STRING),
        Field("Namespace", STRING),
        Field("PodUIDs", _SET),
    ]
    if with_handles:
        fields.append(Field("ResourceHandles", Slice("[]v1alpha2.ResourceHandle", _HANDLE)))
    fields.append(Field("CDIDevices", _CDI))
    claim = Struct("state.ClaimInfoState", tuple(fields))
    return Struct(
        "state.DRAManagerCheckpoint",
        (
            Field("Version", STRING, json="version"),
            Field("Entries", Slice("state.ClaimInfoStateList", claim), json="entries", omitempty=True),
            Field("Checksum", _CHECKSUM, json="checksum"),
        ),
    )


_LEGACY_128 = _legacy_type(with_handles=False)
_LEGACY_129 = _legacy_type(with_handles=True)


@dataclass
class LegacyClaimInfoState:
    driver_name: str
    class_name: str = ""
    claim_uid: str = ""
    claim_name: str = ""
    namespace: str = ""
    pod_uids: list[str] | None = field(default_factory=list)
    cdi_devices: dict[str, list[str] | None] | None = None
    resource_handles: list[tuple[str, str]] | None = None  # (driverName, data); 1.29-1.30 files


def _legacy_hash(t: Struct, version: str, entries: list[dict[str, Any]] | None) -> int:
    return spew_fnv(Pointer(t), {"Version": version, "Entries": entries, "Checksum": 0})


def _legacy_read(data: bytes, t: Struct) -> tuple[dict[str, Any], str | None]:
    # NewDRAManagerCheckpoint: Version "v1", Entries empty non-nil, then json.Unmarshal.
    return go_json_decode(t, data, {"Version": "v1", "Entries": [], "Checksum": 0})


def _legacy_entries(entries: list[dict[str, Any]] | None) -> list[LegacyClaimInfoState] | None:
    if entries is None:
        return None
    out = []
    for e in entries:
        pods = None if e["PodUIDs"] is None else sorted(e["PodUIDs"], key=lambda s: s.encode("utf-8"))
        handles = e.get("ResourceHandles")
        out.append(
            LegacyClaimInfoState(
                e["DriverName"],
                e["ClassName"],
                e["ClaimUID"],
                e["ClaimName"],
                e["Namespace"],
                pods,
                e["CDIDevices"],
                None if handles is None else [(h["DriverName"], h["Data"]) for h in handles],
            )
        )
    return out


def encode_legacy(entries: list[LegacyClaimInfoState], *, checksum: int | None = None) -> bytes:
    """A legacy file as a 1.27/1.28 kubelet writes it (1.29/1.30 accept it via their fallback)."""
    go_entries = [
        {
            "DriverName": e.driver_name,
            "ClassName": e.class_name,
            "ClaimUID": e.claim_uid,
            "ClaimName": e.claim_name,
            "Namespace": e.namespace,
            "PodUIDs": None if e.pod_uids is None else {u: {} for u in e.pod_uids},
            "CDIDevices": e.cdi_devices,
        }
        for e in entries
    ]
    ck = _legacy_hash(_LEGACY_128, "v1", go_entries) if checksum is None else checksum
    return go_json_encode(_LEGACY_128, {"Version": "v1", "Entries": go_entries, "Checksum": ck})


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class ParsedDRA:
    """What a kubelet would make of a ``dra_manager_state`` file.

    For format "v1", ``state`` is the decoded Data (None if it does not decode) and ``data`` the
    raw Data string; for "legacy", ``legacy_entries`` and ``variant`` (which layout's checksum
    matched) are set.
    """

    format: DRAFormat
    stored_checksum: int | None
    computed_checksum: int | None
    valid: bool
    reason: str | None
    data: str | None = None
    state: DRAState | None = None
    legacy_entries: list[LegacyClaimInfoState] | None = None
    variant: str | None = None
    candidates: tuple[tuple[str, int], ...] = ()  # legacy: (layout, checksum it computes)

    @property
    def label(self) -> str:
        return FORMAT_LABELS[self.format]

    def readable_by(self, minor: int) -> bool:
        """Whether a kubelet 1.<minor> (with DRA enabled) loads this file."""
        if self.format == "v1":
            return self.valid and minor >= 31
        minors: set[int] = set()
        for variant, computed in self.candidates:
            if computed == self.stored_checksum:
                minors |= {27, 28} if variant.startswith("1.27") else {29, 30}
        return minor in minors  # 1.26 used another layout, not modelled here


def detect_format(data: bytes) -> DRAFormat:
    """Legacy files have "version"/"entries" keys; everything else is read as the 1.31+ format."""
    keys = {k.lower() for k, _ in object_shape(data) or []}
    return "legacy" if keys & {"version", "entries"} and "data" not in keys else "v1"


def parse(data: bytes) -> ParsedDRA:
    """Read a ``dra_manager_state`` file's bytes as the matching kubelet would."""
    return parse_legacy(data) if detect_format(data) == "legacy" else parse_v1(data)


def parse_v1(data: bytes) -> ParsedDRA:
    """The 1.31+ reader: GetOrCreate (unmarshal over NewCheckpoint(nil), CRC check), GetEntries."""
    outer, error = go_json_decode(_OUTER, data, {"Data": EMPTY_DATA, "Checksum": crc32_checksum(EMPTY_DATA)})
    if error is not None:
        return ParsedDRA("v1", None, None, False, error)
    stored, text = outer["Checksum"], outer["Data"]
    computed = crc32_checksum(text)
    inner, inner_error = go_json_decode(_DATA_135, text.encode("utf-8"))
    state = None if inner_error else _state_from_go(inner)
    if computed != stored:
        reason = (
            f"checksum mismatch: file says {stored}, CRC-32 of Data is {computed} "
            "(the kubelet refuses to start: checkpoint is corrupted)"
        )
    elif inner_error:
        reason = f"Data does not decode ({inner_error}); the kubelet cannot restore claims"
    else:
        reason = None
    return ParsedDRA("v1", stored, computed, reason is None, reason, text, state)


def parse_legacy(data: bytes) -> ParsedDRA:
    """The 1.27-1.28 reader, then the 1.29-1.30 one (with handles, then its fallback)."""
    v128, err128 = _legacy_read(data, _LEGACY_128)
    v129, err129 = _legacy_read(data, _LEGACY_129)
    candidates: list[tuple[str, int]] = []
    if err128 is None:
        candidates.append(("1.27-1.28", _legacy_hash(_LEGACY_128, v128["Version"], v128["Entries"])))
    if err129 is None:
        candidates.append(
            (
                "1.29 with ResourceHandles (reconstructed layout)",
                _legacy_hash(_LEGACY_129, v129["Version"], v129["Entries"]),
            )
        )
        # The fallback re-hashes without handles, version forced to "v1", entries never nil.
        without = [{k: v for k, v in e.items() if k != "ResourceHandles"} for e in v129["Entries"] or []]
        candidates.append(("1.29-1.30 fallback without ResourceHandles", _legacy_hash(_LEGACY_128, "v1", without)))
    if not candidates:
        return ParsedDRA("legacy", None, None, False, err128 or err129)
    source = v129 if err129 is None else v128
    stored = source["Checksum"]
    entries = _legacy_entries(source["Entries"])
    for variant, computed in candidates:
        if computed == stored:
            return ParsedDRA(
                "legacy",
                stored,
                computed,
                True,
                None,
                legacy_entries=entries,
                variant=variant,
                candidates=tuple(candidates),
            )
    computed = candidates[0][1]
    reason = (
        f"checksum mismatch: file says {stored}, no known 1.26-1.30 layout hashes to it "
        f"({', '.join(f'{v}: {c}' for v, c in candidates)})"
    )
    return ParsedDRA("legacy", stored, computed, False, reason, legacy_entries=entries, candidates=tuple(candidates))
