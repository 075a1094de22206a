"""The fake device plugin's configuration: plain dataclasses that round-trip through JSON.

The handle writes this file, the plugin process reads it; nothing else crosses the process boundary.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from device_conformance.core.errors import BadInput
from device_conformance.fakes.device_plugin.defect_registry import DEVICE_PLUGIN_DEFECTS

FIX_CONFIG = "write it with DevicePluginConfig(...).save(PATH) (fakes/device_plugin/config.py)"

HEALTHY = "Healthy"
UNHEALTHY = "Unhealthy"
API_VERSION = "v1beta1"
KUBELET_SOCKET_NAME = "kubelet.sock"


@dataclass
class DeviceConfig:
    """One device as ListAndWatch reports it."""

    id: str
    health: str = HEALTHY
    numa_nodes: list[int] = field(default_factory=list)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DeviceConfig:
        return cls(id=data["id"], health=data.get("health", HEALTHY), numa_nodes=list(data.get("numa_nodes", [])))


@dataclass
class OptionsConfig:
    """DevicePluginOptions, sent in Register and returned by GetDevicePluginOptions."""

    pre_start_required: bool = False
    get_preferred_allocation_available: bool = False


@dataclass
class MountConfig:
    container_path: str
    host_path: str
    read_only: bool = False


@dataclass
class DeviceSpecConfig:
    container_path: str
    host_path: str
    permissions: str = "rw"


# The names of the defective-vendor modes of the whole plugin (DevicePluginConfig.defects): what each breaks, the
# rule it violates and how it is applied are its entry in defect_registry.py.
DEFECTS = DEVICE_PLUGIN_DEFECTS.names
# Where allocate-mounts-host-dev mounts the node's /dev in the container.
HOST_DEV_MOUNT = "/host/dev"

# Behaviours of real plugins that keep the contract (DevicePluginConfig.patterns), so the certifier can be shown
# to pass them:
#   list-empty-then-full: every ListAndWatch stream sends an empty list first and the full one LIST_DELAY later
#       (a plugin that answers before its device scan finished). Harmless: the kubelet replaces the resource's
#       device set with each response (pkg/kubelet/cm/devicemanager/manager.go genericDeviceUpdateCallback).
#   long-socket-name: the socket (the Register endpoint) has a name of LONG_SOCKET_NAME characters, as plugins
#       naming it after their resource and an instance do. The API puts no limit on the endpoint
#       (staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto RegisterRequest.endpoint); only
#       sun_path's 107 bytes (unix(7)) bound /var/lib/kubelet/device-plugins/<endpoint>, 92 bytes with 60.
#   device-on-two-numa-nodes: the first device's topology names NUMA nodes 0 and 1 (a device attached to two
#       sockets' PCIe roots; api.proto TopologyInfo.nodes is repeated). The kubelet counts it once in capacity and
#       lists it once per NUMA node in podresources (pkg/kubelet/cm/container_manager.go
#       containerDevicesFromResourceDeviceInstances).
#   another-resource-first: the process also serves a second resource, OTHER_RESOURCE_SUFFIX appended to the
#       resource name, on a socket of its own (OTHER_SOCKET_SUFFIX), and registers it before the resource under
#       test, every time it registers. One process, several resources, each its own plugin: NVIDIA
#       k8s-device-plugin starts one plugin per resource of its mixed MIG strategy (nvidia.com/gpu and one per MIG
#       profile), each serving nvidia-<name>.sock and sending its own Register (internal/plugin/server.go Start,
#       internal/plugin/manager/nvml.go GetPlugins). The kubelet keeps one endpoint per resource name
#       (pkg/kubelet/cm/devicemanager/manager.go PluginConnected).
#   no-preference: GetPreferredAllocation is advertised (the pattern turns the option on) but answers an empty
#       response, no preference for any container, as the stub behind upstream's sample device plugin does by default
#       (pkg/kubelet/cm/devicemanager/plugin/v1beta1/stub.go defaultGetPreferredAllocFunc). The kubelet then picks the
#       devices itself (manager.go callGetPreferredAllocationIfAvailable returns an empty set, and devicesToAllocate
#       falls back: "if the plugin did not return a preferred allocation (or didn't return a large enough one)").
#   register-without-options: RegisterRequest carries no options; GetDevicePluginOptions answers them. The kubelet
#       never reads RegisterRequest.options: it keeps what GetDevicePluginOptions answers (pkg/kubelet/cm/
#       devicemanager/manager.go PluginConnected; server.go and handler.go read only version, endpoint and resource
#       name), and the device-plugin docs name only those three as what a plugin sends at registration
#       (kubernetes/website content/en/docs/concepts/extend-kubernetes/compute-storage-net/device-plugins.md).
PATTERNS = (
    "list-empty-then-full",
    "long-socket-name",
    "device-on-two-numa-nodes",
    "another-resource-first",
    "no-preference",
    "register-without-options",
)
OTHER_RESOURCE_SUFFIX = "-other"
OTHER_SOCKET_SUFFIX = "-other.sock"
LONG_SOCKET_NAME = 60
# The delay of list-empty-then-full's full list.
LIST_DELAY = 0.3

# The fields of a ContainerAllocateResponse, by the names AllocateConfig.drop takes.
RESPONSE_FIELDS = ("envs", "mounts", "devices", "annotations", "cdi_devices")


@dataclass
class AllocateConfig:
    """What Allocate returns for each container request.

    Every string may use the placeholders {ids} (allocated IDs comma-joined), {count}, {resource},
    and {id} / {index}. An item whose text uses {id} or {index} is repeated once per allocated device
    (e.g. a mount per device); the other items appear once.

    Defective-vendor modes (off by default; each makes a conformance check fail, which is how the
    suites show that check bites): `drop` names response fields (RESPONSE_FIELDS) the plugin leaves
    out of its answer although configured; `ids_override` fills the placeholders with these device IDs
    instead of the ones the kubelet allocated (a plugin that hands the container other devices).
    """

    envs: dict[str, str] = field(default_factory=dict)
    mounts: list[MountConfig] = field(default_factory=list)
    devices: list[DeviceSpecConfig] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: list[str] = field(default_factory=list)
    drop: list[str] = field(default_factory=list)
    ids_override: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.drop) - set(RESPONSE_FIELDS))
        if unknown:
            raise ValueError(f"AllocateConfig.drop: unknown response fields {unknown}; use some of {RESPONSE_FIELDS}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AllocateConfig:
        return cls(
            envs=dict(data.get("envs", {})),
            mounts=[MountConfig(**m) for m in data.get("mounts", [])],
            devices=[DeviceSpecConfig(**d) for d in data.get("devices", [])],
            annotations=dict(data.get("annotations", {})),
            cdi_devices=list(data.get("cdi_devices", [])),
            drop=list(data.get("drop", [])),
            ids_override=list(data.get("ids_override", [])),
        )


@dataclass
class DevicePluginConfig:
    """Everything the plugin process needs. Paths are host paths as the plugin process sees them."""

    resource_name: str
    socket_dir: str
    socket_name: str = "fake-device-plugin.sock"
    devices: list[DeviceConfig] = field(default_factory=list)
    options: OptionsConfig = field(default_factory=OptionsConfig)
    allocate: AllocateConfig = field(default_factory=AllocateConfig)
    # Sent in RegisterRequest.version; a test sets a wrong one to see the kubelet reject it.
    api_version: str = API_VERSION
    register_on_start: bool = True
    # Re-register when kubelet.sock is re-created or our own socket is deleted (kubelet restart).
    auto_reregister: bool = True
    # Start with registration held back (upstream REGISTER_CONTROL_FILE): nothing registers until released.
    hold_registration: bool = False
    # Empty means socket_dir/kubelet.sock.
    kubelet_socket: str = ""
    # Filled in by the handle (a path in its workdir) when empty; must not live in socket_dir,
    # because the kubelet deletes every socket there when it starts.
    control_socket: str = ""
    call_log: str = ""
    register_timeout: float = 15.0
    # A directory the container runtime reads CDI specs from (the node's /var/run/cdi as the plugin
    # process sees it): the plugin writes one spec there while it runs, kind `cdi_kind` (default: the
    # resource name, "vendor/class"), with one CDI device per configured device named by its ID, whose
    # edit is the env var cdi_env(ID). Allocate names them through AllocateConfig.cdi_devices, e.g.
    # "{resource}={id}". Empty: no spec.
    cdi_dir: str = ""
    cdi_kind: str = ""
    # GetPreferredAllocation (when advertised in options) prefers these device IDs, in this order, over
    # the kubelet's order of the available ones; a preference the kubelet must honour.
    preferred_order: list[str] = field(default_factory=list)
    # Defective-vendor mode: GetPreferredAllocation fails (INTERNAL) for a container request of one of
    # these sizes, as in upstream's test of the stale-allocation fix (kubernetes#130172).
    preferred_fail_sizes: list[int] = field(default_factory=list)
    # Names from DEFECTS (defect_registry.py); empty for a plugin that keeps the contract.
    defects: list[str] = field(default_factory=list)
    # Names from PATTERNS: harmless behaviours of real plugins.
    patterns: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        DEVICE_PLUGIN_DEFECTS.check(self.defects)
        unknown = sorted(set(self.patterns) - set(PATTERNS))
        if unknown:
            raise ValueError(f"DevicePluginConfig.patterns: unknown {unknown}; use some of {PATTERNS}")
        if "device-on-two-numa-nodes" in self.patterns and self.devices:
            self.devices[0].numa_nodes = [0, 1]
        if "no-preference" in self.patterns:  # advertised, so the kubelet asks and gets no preference
            self.options.get_preferred_allocation_available = True

    @property
    def cdi_spec_kind(self) -> str:
        return self.cdi_kind or self.resource_name

    @property
    def cdi_spec_path(self) -> str:
        return os.path.join(self.cdi_dir, f"{Path(self.socket_name).stem}.json") if self.cdi_dir else ""

    @property
    def kubelet_socket_path(self) -> str:
        return self.kubelet_socket or os.path.join(self.socket_dir, KUBELET_SOCKET_NAME)

    @property
    def other_resource(self) -> tuple[str, str]:
        """(resource name, socket name) of pattern another-resource-first's second resource."""
        return self.resource_name + OTHER_RESOURCE_SUFFIX, Path(self.socket_name).stem + OTHER_SOCKET_SUFFIX

    def socket_path(self, socket_name: str | None = None) -> str:
        return os.path.join(self.socket_dir, socket_name or self.socket_name)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DevicePluginConfig:
        data = dict(data)
        data["devices"] = [DeviceConfig.from_dict(d) for d in data.get("devices", [])]
        data["options"] = OptionsConfig(**data.get("options", {}))
        data["allocate"] = AllocateConfig.from_dict(data.get("allocate", {}))
        return cls(**data)

    @classmethod
    def load(cls, path: str | Path) -> DevicePluginConfig:
        """The config in `path`; BadInput naming the key or the JSON error when it is not one."""
        where = f"fake device plugin config {path}"
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise BadInput(f"{where} is not readable JSON: {exc}", FIX_CONFIG) from None
        if not isinstance(data, dict):
            raise BadInput(f"{where} holds a {type(data).__name__}, not an object", FIX_CONFIG)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        missing = sorted(
            f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING and f.name not in data
        )
        if unknown or missing:
            what = "; ".join(
                part for part in (unknown and f"unknown keys {unknown}", missing and f"missing keys {missing}") if part
            )
            raise BadInput(f"{where}: {what}", f"{FIX_CONFIG}; its keys: {sorted(known)}")
        try:
            return cls.from_dict(data)
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise BadInput(f"{where}: a nested value is wrong: {type(exc).__name__}: {exc}", FIX_CONFIG) from None

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json())


def cdi_env(device_id: str) -> str:
    """The env var ("NAME=VALUE") the plugin's CDI spec gives a container for device `device_id`."""
    return f"DC_CDI_{re.sub(r'[^A-Z0-9]', '_', device_id.upper())}={device_id}"
