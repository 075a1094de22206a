"""The DRA health-info cache's checkpoint, ``/var/lib/kubelet/dra_health_state`` (1.36+, with the DRA resource
health feature; pkg/kubelet/cm/dra/healthinfo.go and state/state.go in module source v1.37.1).

The file is ``json.Marshal`` of a ``state.DevicesHealthMap`` and nothing else: no envelope and **no checksum**
(healthInfoCache.saveToCheckpointInternal writes it through a temporary file and a rename; it does not use the
kubelet's checkpointmanager). Layout: driver name -> ``{"Devices": {"<pool>/<device>": DeviceHealth}}`` with
DeviceHealth's fields untagged, in declaration order: PoolName, DeviceName, Health ("Healthy", "Unhealthy",
"Unknown"), LastUpdated (time.Time, RFC 3339 with nanoseconds), HealthCheckTimeout (time.Duration: integer
nanoseconds; 0 means the 30 s default) and Message.

Reading (newHealthInfoCache -> loadFromCheckpoint): a missing file is an empty cache; any error of
``json.Unmarshal`` is logged ("Failed to load health checkpoint, proceeding with empty cache") and the kubelet
starts anyway, keeping what did decode (encoding/json goes on after a type error). A file is *accepted* here when
it decodes without error. The kubelet rewrites the whole file on every health change and when a driver's health
data is cleared (its unregistration: clearDriver).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from device_conformance.kubelet_state.gojson import go_json_decode, go_json_encode
from device_conformance.kubelet_state.gotypes import STRING, Field, Map, Scalar, Struct

FILE_NAME = "dra_health_state"
DEFAULT_PATH = "/var/lib/kubelet/" + FILE_NAME
FORMAT = "v1"
LABEL = "dra health (1.36+, plain JSON, no checksum)"
HEALTH_STATUSES = ("Healthy", "Unhealthy", "Unknown")
# healthinfo.go DefaultHealthTimeout: a device with HealthCheckTimeout 0 turns Unknown 30 s after LastUpdated.
DEFAULT_HEALTH_TIMEOUT_NS = 30 * 1_000_000_000

_TIME = Scalar("time.Time", "string")  # time.Time's MarshalJSON is an RFC 3339 string; read back by _check_time
_DEVICE = Struct(
    "state.DeviceHealth",
    (
        Field("PoolName", STRING),
        Field("DeviceName", STRING),
        Field("Health", Scalar("state.DeviceHealthStatus", "string")),
        Field("LastUpdated", _TIME),
        Field("HealthCheckTimeout", Scalar("time.Duration", "int", 64)),
        Field("Message", STRING),
    ),
)
_DRIVER = Struct("state.DriverHealthState", (Field("Devices", Map("map[string]state.DeviceHealth", STRING, _DEVICE)),))
_FILE = Map("state.DevicesHealthMap", STRING, _DRIVER)
# time.Time.UnmarshalJSON: RFC 3339 (time.RFC3339, fractional seconds allowed), a 4-digit year.
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")
_ZERO_TIME = "0001-01-01T00:00:00Z"  # what json.Marshal writes for a zero time.Time


@dataclass
class DeviceHealth:
    """One device's health as the kubelet keeps it. `last_updated` is the time text exactly as stored."""

    pool_name: str
    device_name: str
    health: str = "Healthy"
    last_updated: str = _ZERO_TIME
    health_check_timeout_ns: int = 0  # 0: DEFAULT_HEALTH_TIMEOUT_NS
    message: str = ""

    @property
    def key(self) -> str:
        """The key the kubelet files it under: "<pool>/<device>" (healthinfo.go updateHealthInfo)."""
        return f"{self.pool_name}/{self.device_name}"


# driver name -> its devices by key (None: the driver's Devices map is JSON null).
HealthState = dict[str, dict[str, DeviceHealth] | None]


def go_time(when: datetime) -> str:
    """`when` as Go's time.Time MarshalJSON writes it: RFC 3339 with nanoseconds, trailing zeros dropped."""
    when = when.astimezone(UTC)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if when.microsecond:
        text += "." + f"{when.microsecond:06d}".rstrip("0")
    return text + "Z"


def encode(state: HealthState) -> bytes:
    """The file's bytes, as ``json.Marshal(cache.HealthInfo)`` writes them."""
    return go_json_encode(_FILE, {driver: _driver_to_go(devices) for driver, devices in state.items()})


def _driver_to_go(devices: dict[str, DeviceHealth] | None) -> dict[str, Any]:
    if devices is None:
        return {"Devices": None}
    return {
        "Devices": {
            key: {
                "PoolName": d.pool_name,
                "DeviceName": d.device_name,
                "Health": d.health,
                "LastUpdated": d.last_updated,
                "HealthCheckTimeout": d.health_check_timeout_ns,
                "Message": d.message,
            }
            for key, d in devices.items()
        }
    }


@dataclass(frozen=True)
class ParsedHealth:
    """What a kubelet makes of the file: `state` what it keeps (also after an error, as encoding/json does), `valid`
    whether it loads without the error it logs. No checksum: the stored and computed ones are always None."""

    valid: bool
    reason: str
    state: HealthState | None
    format: str = FORMAT
    stored_checksum: None = None
    computed_checksum: None = None

    @property
    def label(self) -> str:
        return LABEL

    def readable_by(self, minor: int) -> bool:
        """Only 1.36+ kubelets read the file; to older ones it is a stray file."""
        return self.valid and minor >= 36


def parse(data: bytes) -> ParsedHealth:
    value, error = go_json_decode(_FILE, data)
    state: HealthState | None = None
    if value is not None:
        state = {driver: _driver_from_go(raw) for driver, raw in value.items()}
    if error is None:
        error = _check_times(state or {})
    if error is not None:
        return ParsedHealth(False, f"{error} (the kubelet logs 'Failed to load health checkpoint')", state)
    return ParsedHealth(True, "", state)


def _driver_from_go(raw: dict[str, Any]) -> dict[str, DeviceHealth] | None:
    devices = raw["Devices"]
    if devices is None:
        return None
    # No LastUpdated in the JSON leaves Go's zero time (our model's "" stands for it).
    return {
        key: DeviceHealth(
            d["PoolName"],
            d["DeviceName"],
            d["Health"],
            d["LastUpdated"] or _ZERO_TIME,
            d["HealthCheckTimeout"],
            d["Message"],
        )
        for key, d in devices.items()
    }


def _check_times(state: HealthState) -> str | None:
    for devices in state.values():
        for key, device in (devices or {}).items():
            if not _RFC3339.fullmatch(device.last_updated):
                return f'parsing time "{device.last_updated}" as RFC 3339 failed (LastUpdated of {key})'
    return None
