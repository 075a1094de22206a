"""The fake DRA driver's configuration: a JSON-serialisable dataclass shared by the process and its handle."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.defects import UnknownDefect
from device_conformance.fakes.common.sockets import SUN_PATH_MAX
from device_conformance.fakes.dra_driver.defect_registry import DRA_DRIVER_DEFECTS

FIX_CONFIG = "write it with DriverConfig(...).to_json() (fakes/dra_driver/config.py)"

DEFAULT_SERVICES = ["v1.DRAPlugin", "v1beta1.DRAPlugin"]

# The names of the defects a "defective vendor" driver can have (DriverConfig.defects): what each breaks, the
# rule it violates and how it is applied are its entry in defect_registry.py.
DEFECTS = DRA_DRIVER_DEFECTS.names

# Behaviours real drivers have that the DRA API allows (DriverConfig.patterns); a certifier must pass them:
#   fetch-claims-first: NodePrepareResources reads every claim of the call first and fails the whole call with a
#       gRPC error when one is unknown, before preparing any (k8s.io/dynamic-resource-allocation kubeletplugin
#       draplugin.go, nodePluginImplementation.NodePrepareResources -> getResourceClaims; the API allows it:
#       "NodePrepareResources will be called again for those that are missing").
#   cdi-common-device: a driver-wide CDI spec written at start-up with one device, listed in every claim's answer
#       and never removed (kubernetes-sigs/dra-example-driver cmd/dra-example-kubeletplugin/cdi.go,
#       CreateCommonSpecFile and GetClaimDevices' cdiCommonDeviceName "common").
#   cdi-static-per-device: one CDI spec per device written at start-up and never removed; answers name those
#       devices and no per-claim spec is written.
#   serve-after-notify: the DRA service is served and slices published only once NotifyRegistrationStatus with
#       plugin_registered=True arrives (the kubelet sends it to every new registration socket:
#       pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go, GenerateRegisterPluginFunc).
#   prepare-no-devices: every claim is answered with zero devices and no CDI spec is written (a driver applying
#       devices through NRI; the API: "each request may have zero or more devices").
#   claim-error-once: the first NodePrepareResources and the first NodeUnprepareResources of each claim answer OK
#       with the claim's `error` set (a transient failure), later ones as usual. The kubeletplugin helper answers
#       every PrepareResult.Err and UnprepareResourceClaims error so (draplugin.go nodePluginImplementation); the
#       API: "If non-empty, preparing the ResourceClaim failed" and the kubelet tries again
#       (pkg/kubelet/cm/dra/manager.go: "NodePrepareResources failed for ResourceClaim", the pod's sync retried).
#   claim-error-for-a-while: each claim's NodePrepareResources and NodeUnprepareResources answer OK with the
#       claim's `error` set for CLAIM_ERROR_SECONDS from the first such call for it (in this process), then as
#       usual: a driver busy with the claim for longer than a few seconds. NVIDIA/k8s-dra-driver-gpu
#       cmd/gpu-kubelet-plugin/driver.go nodePrepareResource and nodeUnprepareResource answer PrepareResult.Err
#       "error acquiring prep/unprep lock" while another claim holds the node-wide prepare lock (10 s timeout, e.g.
#       behind a MIG device being created) and "error preparing devices for claim" when a device is not set up
#       yet; the kubeletplugin helper passes them on as the claim's error, PrepareResult.Err: "the kubelet will try
#       to prepare the ResourceClaim again later" (k8s.io/dynamic-resource-allocation kubeletplugin/draplugin.go).
#       The kubelet does so at every pod sync, 60-90 s apart, without limit (pkg/kubelet/kuberuntime/
#       kuberuntime_manager.go SyncPod; pkg/kubelet/pod_workers.go completeWork), so such a pod starts after a resync.
#   health-not-supported: the health service is advertised and served (the pattern turns it on) but every
#       NodeWatchResources is answered UNIMPLEMENTED "device health reporting is not supported by this driver": a
#       driver built with the kubeletplugin helper from v0.37 that has no health to report. The helper always
#       advertises and serves the service, and its WatchHealthStatus returning ErrHealthNotSupported ends the
#       stream so (k8s.io/dynamic-resource-allocation v0.37.2 kubeletplugin/health.go healthServerBridge); a
#       1.37+ kubelet then stops watching (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go add(), v1.37.2).
#   dra-on-registration-socket: one socket for everything: the DRA services are served on the registration socket and
#       GetInfo names no endpoint, which the API allows (pluginregistration/v1 api.proto PluginInfo.endpoint:
#       "Optional endpoint location"); the kubelet then uses the registration socket for its calls
#       (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go GenerateRegisterPluginFunc:
#       `if infoResp.Endpoint == "" { infoResp.Endpoint = socketPath }`).
PATTERNS = (
    "fetch-claims-first",
    "cdi-common-device",
    "cdi-static-per-device",
    "serve-after-notify",
    "prepare-no-devices",
    "claim-error-once",
    "claim-error-for-a-while",
    "health-not-supported",
    "dra-on-registration-socket",
)
# The helper's answer to every NodeWatchResources of a driver without health (kubeletplugin/health.go
# ErrHealthNotSupported).
HEALTH_NOT_SUPPORTED = "device health reporting is not supported by this driver"
CLAIM_ERROR_ONCE = "transient failure, try again (pattern claim-error-once)"
# claim-error-for-a-while: twice the 6 s a certifier calling 3 times 2 s apart waits, yet well within one resync.
CLAIM_ERROR_SECONDS = 12.0
CLAIM_ERROR_FOR_A_WHILE = "device still being set up, try again (pattern claim-error-for-a-while)"
COMMON_CDI_DEVICE = "common"
INVALID_CDI_VERSION = "0.0.0-defect"
# The DRAResourceHealth API versions a driver may serve, in the kubelet's order of preference (pkg/kubelet/cm/dra/
# plugin/dra_plugin.go healthServicesSupportedByKubelet, v1.37.0+), and the fake's default: the kubeletplugin
# helper's, both (k8s.io/dynamic-resource-allocation v0.37.2 kubeletplugin/draplugin.go: healthV1 and healthV1alpha1
# default to true; HealthV1alpha1(false) leaves v1 alone). A driver built with the helper before v0.37 serves v1alpha1
# alone, the one version a kubelet before 1.37 knows (kubernetes#139477, CHANGELOG-1.37 v1.37.0-rc.0).
HEALTH_APIS = ("v1", "v1alpha1")
DEFAULT_HEALTH_APIS = HEALTH_APIS


@dataclass
class DeviceSpec:
    """One device in the node's ResourceSlice.

    attributes: plain JSON values (bool, int, str) or an explicit DeviceAttribute such as
    {"version": "1.2.3"}. capacity: name -> quantity string. taints: DeviceTaint dicts
    ({"key", "value", "effect", optional "timeAdded"}). allow_multiple_allocations: the device can be
    allocated to several claims at once (consumable capacity, DRAConsumableCapacity, 1.34+).
    consumes_counters: counter set -> counter -> quantity this device takes from the driver's shared counters
    (DriverConfig.shared_counters) while it is allocated: a partition of a partitionable device
    (KEP-4815, DRAPartitionableDevices, beta and on from 1.36).
    """

    name: str
    attributes: dict[str, Any] = field(default_factory=dict)
    capacity: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    allow_multiple_allocations: bool = False
    consumes_counters: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | DeviceSpec) -> DeviceSpec:
        if isinstance(data, DeviceSpec):
            return data
        return cls(
            name=data["name"],
            attributes=dict(data.get("attributes") or {}),
            capacity={k: str(v) for k, v in (data.get("capacity") or {}).items()},
            taints=[dict(t) for t in data.get("taints") or []],
            allow_multiple_allocations=bool(data.get("allow_multiple_allocations")),
            consumes_counters={
                counter_set: {k: str(v) for k, v in counters.items()}
                for counter_set, counters in (data.get("consumes_counters") or {}).items()
            },
        )


def registration_socket_name(driver_name: str, instance: str = "") -> str:
    """<driver>-reg.sock, or <driver>-<instance>-reg.sock for a rolling-update instance: the kubeletplugin
    helper's names with RollingUpdate(podUID) (k8s.io/dynamic-resource-allocation v0.37.1
    kubeletplugin/draplugin.go, RollingUpdateRegistrarSocketFile and the option defaults)."""
    return f"{driver_name}-{instance}-reg.sock" if instance else f"{driver_name}-reg.sock"


def service_socket_name(instance: str = "") -> str:
    """dra.sock, or dra-<instance>.sock for a rolling-update instance (same source)."""
    return f"dra-{instance}.sock" if instance else "dra.sock"


@dataclass
class DriverConfig:
    """Everything the driver process needs. Paths are HOST paths unless named for the kubelet's view."""

    driver_name: str
    node_name: str
    registry_dir: str  # the kubelet's plugins_registry directory, host path
    plugin_dir: str  # where dra.sock goes, host path
    # The service socket as the kubelet sees it (kind node container, other mount namespace);
    # empty = <plugin_dir>/dra.sock.
    kubelet_endpoint_path: str = ""
    services: list[str] = field(default_factory=lambda: list(DEFAULT_SERVICES))
    health_service: bool = False
    # Which DRAResourceHealth versions the health service serves and advertises (HEALTH_APIS), when it is on.
    health_apis: list[str] = field(default_factory=lambda: list(DEFAULT_HEALTH_APIS))
    # Every device's health before any push ("Healthy", "Unhealthy", "Unknown"; "" = none), so each stream's first
    # message reports them all, as the kubeletplugin helper asks of a driver ("Send an initial DeviceHealthReport
    # covering all devices": k8s.io/dynamic-resource-allocation v0.37.2 kubeletplugin/draplugin.go WatchHealthStatus).
    initial_health: str = ""
    devices: list[DeviceSpec] = field(default_factory=list)
    # counter set -> counter -> quantity, published in a ResourceSlice of their own (sharedCounters and
    # devices never share a slice: k8s.io/api v0.37.1 resource/v1/types.go ResourceSliceSpec); the
    # devices' consumes_counters draw on them.
    shared_counters: dict[str, dict[str, str]] = field(default_factory=dict)
    # Rolling-update instance (k8s.io/dynamic-resource-allocation kubeletplugin RollingUpdate): a non-empty
    # instance gives the sockets names of their own, <driver>-<instance>-reg.sock and dra-<instance>.sock, so
    # two processes of one driver can be registered with the kubelet at once (1.33+).
    instance: str = ""
    pool_name: str = ""  # empty = node_name
    kubeconfig: str | None = None  # None = no API calls at all (unit tests)
    resource_api_version: str = "resource.k8s.io/v1"
    cdi_dir: str | None = None
    cdi_kind: str = ""  # empty = <driver_name>/device
    control_socket: str = ""
    call_log: str = ""
    state_file: str | None = None  # prepared set survives a SIGKILL when set
    register_on_start: bool = True
    serve_dra_on_start: bool = True
    publish_on_start: bool = True
    defects: list[str] = field(default_factory=list)  # names from DEFECTS (defect_registry.py)
    patterns: list[str] = field(default_factory=list)  # names from PATTERNS

    def __post_init__(self) -> None:
        self.devices = [DeviceSpec.from_dict(d) for d in self.devices]
        self.shared_counters = {
            name: {k: str(v) for k, v in counters.items()} for name, counters in self.shared_counters.items()
        }
        self.services = list(self.services)
        self.health_apis = list(self.health_apis)
        self.defects = list(self.defects)
        self.patterns = list(self.patterns)
        # The helper advertises and serves the service of a driver that declines health (pattern health-not-supported).
        self.health_service = self.health_service or "health-not-supported" in self.patterns

    # Derived values, in one place so the process and the handle agree.
    @property
    def pool(self) -> str:
        return self.pool_name or self.node_name

    @property
    def registration_socket(self) -> str:
        return os.path.join(self.registry_dir, registration_socket_name(self.driver_name, self.instance))

    @property
    def service_socket(self) -> str:
        return os.path.join(self.plugin_dir, service_socket_name(self.instance))

    @property
    def endpoint(self) -> str:
        return self.kubelet_endpoint_path or self.service_socket

    @property
    def cdi(self) -> str:
        return self.cdi_kind or f"{self.driver_name}/device"

    @property
    def advertised_versions(self) -> list[str]:
        """GetInfo's supported_versions: the DRA services, then each health version served (v1.DRAResourceHealth),
        as the kubeletplugin helper lists them (draplugin.go: supportedServices)."""
        versions = list(self.services)
        if self.health_service:
            versions += [
                f"{api}.DRAResourceHealth" for api in self.health_apis if f"{api}.DRAResourceHealth" not in versions
            ]
        return versions

    def sockets(self) -> list[str]:
        return [p for p in (self.registration_socket, self.service_socket, self.control_socket) if p]

    def validate(self) -> None:
        for name in ("driver_name", "node_name", "registry_dir", "plugin_dir", "control_socket", "call_log"):
            if not getattr(self, name):
                raise BadInput(f"fake DRA driver config: {name} is empty", f"set {name}")
        try:
            DRA_DRIVER_DEFECTS.check(self.defects)
        except UnknownDefect as exc:
            raise BadInput(
                f"fake DRA driver config: {exc}", "name defects from fakes/dra_driver/defect_registry.py"
            ) from None
        if self.health_service and (not self.health_apis or set(self.health_apis) - set(HEALTH_APIS)):
            raise BadInput(
                f"fake DRA driver config: health_apis {self.health_apis} names none or other than {list(HEALTH_APIS)}",
                "name the DRAResourceHealth versions to serve, e.g. health_apis=['v1', 'v1alpha1'], or leave "
                "health_service off",
            )
        if self.initial_health not in ("", "Healthy", "Unhealthy", "Unknown"):
            raise BadInput(
                f"fake DRA driver config: initial_health {self.initial_health!r} is no device health",
                "use Healthy, Unhealthy, Unknown or leave it empty",
            )
        unknown = sorted(set(self.patterns) - set(PATTERNS))
        if unknown:
            raise BadInput(f"fake DRA driver config: unknown patterns {unknown}", f"use only {list(PATTERNS)}")
        for path in self.sockets():
            if len(os.fsencode(path)) > SUN_PATH_MAX:
                raise BadInput(
                    f"socket path {path!r} is longer than {SUN_PATH_MAX} bytes",
                    "use a short directory, e.g. tempfile.mkdtemp(dir='/tmp')",
                )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DriverConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise BadInput(f"fake DRA driver config: unknown keys {unknown}", f"use only {sorted(known)}")
        return cls(**data)

    @classmethod
    def load(cls, path: str) -> DriverConfig:
        """The config in `path`, validated; BadInput naming what is wrong when it is not one."""
        try:
            with open(path) as f:
                data = json.load(f)
        except (OSError, ValueError) as exc:
            raise BadInput(f"fake DRA driver config {path} is not readable JSON: {exc}", FIX_CONFIG) from None
        if not isinstance(data, dict):
            raise BadInput(f"fake DRA driver config {path} holds a {type(data).__name__}, not an object", FIX_CONFIG)
        try:
            config = cls.from_dict(data)
        except (TypeError, KeyError, ValueError, AttributeError) as exc:
            raise BadInput(f"fake DRA driver config {path}: {type(exc).__name__}: {exc}", FIX_CONFIG) from None
        config.validate()
        return config
