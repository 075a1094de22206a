"""The scenario catalogue as data: every scenario our suites measure themselves against. Sections §2.1-§2.12
mirror upstream's tests; §2.13 is this suite's own (see IDs).

Tests name the scenarios they cover with `@pytest.mark.scenario("DP6", ...)`; the declarative-marker plugin
accepts only IDs from here, and `device-conformance scenarios` (docs/scenarios.md) shows which tests cover
each one. Plain data: no pytest here.

IDs. The catalogue's own numbers stay as they are: DP1-DP11 (device_plugin_test.go), DM1-DM3
(device_manager_test.go), DF1-DF7 (device_plugin_failures_test.go), DRA1-DRA16 (dra_test.go, context
"Resource Kubelet Plugin"). A scenario upstream lists without a number gets `<family>-<context><n>`: the
hyphen says "numbered here", the family is the component (DP device plugin, DM device manager, DRA, DT
device-taint eviction) and the letter the upstream file or context it comes from:

    DP-H  device plugin health in pod status    DRA-T  two DRA drivers on one claim (dra_test.go)
    DP-M  several instances of one plugin       DRA-S  ResourceSlice cleanup (dra_test.go)
    DP-A  allocation in flight                  DRA-H  resource health (dra_test.go)
    DP-C  CRI failures (CRI proxy)              DRA-E  cluster e2e (test/e2e/dra/dra.go, kind)
    DM-U  device manager unit tests             DRA-U  DRA manager unit tests
                                                DT-U   device-taint eviction controller unit tests

The letter X marks a scenario of this suite's own, in §2.13 "beyond the simplest setup": `DP-X<n>`, `DRA-X<n>`,
`DT-X<n>` (the family as above). No upstream test has it: it takes a behaviour upstream tests in its simplest
setup one step further (a second container, request, instance or NUMA node; a rule that changes), read from the
kubelet's or the controller's code. Its `source` is that code, the file and the function(s) the scenario guards
(`<file>.go <function>, ...`, files joined with "; "), not a test file; the section's source says so.

A section tag `§2.N` (how tests named an unnumbered scenario before these IDs) is still accepted: it names
the section's only scenario where it has one (§2.6 = DP-A1, §2.7 = DP-C1), and otherwise no scenario in
particular, so it counts toward none (see `named_by`).

Counting. One scenario per catalogue row or bullet, except where a bullet of the e2e sections (§2.9,
§2.10) strings several upstream tests (ginkgo `It`s) together with ";": there each test is a scenario of
its own, because one of our tests covering one of them says nothing about the others. Bullets of the unit
test sections (§2.8, §2.11, §2.12) name behaviour groups to mirror and stay one scenario each. §2.13: one
scenario per behaviour.

Fields. `since`: the first Kubernetes minor that has what the scenario needs (empty: every minor the suites
run); `feature`: the feature gate it needs, or the gates joined with ", " (which may be off by default in that
minor; what the suites' clusters switch on is in expectations/cluster.py); `until`: the last minor it applies
to; `not_reproducible`: why it cannot run here at all (empty: it can).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from device_conformance.expectations.dra import FIRST_DEVICE_TAINTS_MINOR, FIRST_DRA_MINOR


@dataclass(frozen=True)
class Section:
    """One section of the catalogue: its number (`2.6`), what it covers and the upstream file behind it (§2.13,
    this suite's own: the code read)."""

    number: str
    title: str
    source: str

    @property
    def tag(self) -> str:
        """The marker form of the section: `§2.6`."""
        return f"§{self.number}"


@dataclass(frozen=True)
class Scenario:
    """One scenario: a stable ID, its section, a one-line title and the upstream file it is from (§2.13: the
    upstream code it guards)."""

    id: str
    section: str
    title: str
    source: str
    since: str = ""
    feature: str = ""
    until: str = ""
    not_reproducible: str = ""

    @property
    def reproducible(self) -> bool:
        return not self.not_reproducible

    @property
    def needs(self) -> str:
        """What the scenario needs, in words ("" when nothing beyond the suites' clusters)."""
        parts = []
        if self.since or self.feature:
            parts.append(" ".join(p for p in (f"{self.since}+" if self.since else "", self.feature) if p))
        if self.until:
            parts.append(f"up to {self.until}")
        return ", ".join(parts)


DP_E2E = "test/e2e_node/device_plugin_test.go"
DM_E2E = "test/e2e_node/device_manager_test.go"
DF_E2E = "test/e2e_node/device_plugin_failures_test.go"
DP_HEALTH_E2E = "test/e2e_node/device_plugin_failures_pod_status_test.go"
DP_MULTIPLE_E2E = "test/e2e_node/device_plugin_multiple_test.go"
DP_ALLOCATION_E2E = "test/e2e_node/device_plugin_allocation_test.go"
DP_CRIPROXY_E2E = "test/e2e_node/device_plugin_criproxy_linux_test.go"
DM_UNIT = "pkg/kubelet/cm/devicemanager/manager_test.go"
DRA_E2E_NODE = "test/e2e_node/dra_test.go"
DRA_E2E = "test/e2e/dra/dra.go"
DRA_NODE_ALLOCATABLE_E2E = "test/e2e/common/node/dra_node_allocatable_resources.go"
DRA_UNIT = "pkg/kubelet/cm/dra/manager_test.go"
DT_UNIT = "pkg/controller/devicetainteviction/device_taint_eviction_test.go"
# §2.13, this suite's own: the code each scenario guards (module source v1.37.1), no upstream test.
BEYOND = (
    "code read: pkg/kubelet/cm/devicemanager, pkg/kubelet/cm/dra, pkg/kubelet/apis/podresources, "
    "pkg/controller/devicetainteviction; no upstream test"
)
DM_MANAGER = "pkg/kubelet/cm/devicemanager/manager.go"
DM_POD_DEVICES = "pkg/kubelet/cm/devicemanager/pod_devices.go"
PODRESOURCES = "pkg/kubelet/apis/podresources/server_v1.go"
DRA_MANAGER = "pkg/kubelet/cm/dra/manager.go"
DRA_PLUGINS = "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go"
DRA_HEALTH_INFO = "pkg/kubelet/cm/dra/healthinfo.go"
DT_CONTROLLER = "pkg/controller/devicetainteviction/device_taint_eviction.go"
DT_RULE_STRATEGY = "pkg/registry/resource/devicetaintrule/strategy.go"

DRA_SINCE = f"1.{FIRST_DRA_MINOR}"  # the first resource.k8s.io version the suites' DRA code speaks (v1beta1)
TAINTS_SINCE = f"1.{FIRST_DEVICE_TAINTS_MINOR}"  # DRADeviceTaints, alpha (KEP-5055)
DRA = "DynamicResourceAllocation"
HEALTH = "ResourceHealthStatus"
TAINTS = "DRADeviceTaints"

# Why a scenario cannot run here: the local provider brings up one node from local processes; kind needs
# Docker that can start privileged containers.
NEEDS_TWO_NODES = (
    "needs two nodes (a device-plugin node and a DRA node): the local provider brings up one, and kind's "
    "two-nodes profile needs privileged Docker"
)
GO_HELPER_ONLY = (
    "tests the Go kubeletplugin helper (its context is cancelled with the listener's error), not the kubelet; "
    "a driver written in Python has no such helper"
)

SECTIONS: tuple[Section, ...] = (
    Section("2.1", "Device plugin manager", DP_E2E),
    Section("2.2", "Device manager checkpoint and re-registration", DM_E2E),
    Section("2.3", "Device plugin failures", DF_E2E),
    Section("2.4", "Device plugin health in pod status", DP_HEALTH_E2E),
    Section("2.5", "Several instances of one device plugin", DP_MULTIPLE_E2E),
    Section("2.6", "Allocation in flight", DP_ALLOCATION_E2E),
    Section("2.7", "CRI failures at kubelet start", DP_CRIPROXY_E2E),
    Section("2.8", "Device manager unit tests (behaviours to mirror)", DM_UNIT),
    Section("2.9", "DRA kubelet", DRA_E2E_NODE),
    Section("2.10", "DRA cluster e2e", DRA_E2E),
    Section("2.11", "DRA manager unit tests (behaviours to mirror)", DRA_UNIT),
    Section("2.12", "Device taint eviction", DT_UNIT),
    Section("2.13", "Beyond the simplest setup (this suite's own scenarios, not upstream tests)", BEYOND),
)


def _section(number: str, source: str, *entries: tuple, **common: str) -> tuple[Scenario, ...]:
    """The scenarios of one section, each (id, title) or (id, title, {field: value}); `common` fields apply
    to every entry unless it sets them itself."""
    made = []
    for scenario_id, title, *own in entries:
        fields = {"source": source, **common, **(own[0] if own else {})}
        made.append(Scenario(scenario_id, number, title, **fields))
    return tuple(made)


SCENARIOS: tuple[Scenario, ...] = (
    *_section(
        "2.1",
        DP_E2E,
        ("DP1", "A pod requesting a device runs with one; its log and podresources (v1, v1alpha1) agree"),
        (
            "DP2",
            "A CDI device named by Allocate is accessible in the container",
            {"since": "1.28", "feature": "DevicePluginCDIDevices"},
        ),
        ("DP3", "Device assignments are kept across container restarts"),
        ("DP4", "Device assignments are kept across kubelet restarts"),
        ("DP5", "Device assignments are kept across a container restart followed by a kubelet restart"),
        ("DP6", "A Succeeded pod is not re-admitted after a kubelet restart with its plugin gone (#126341)"),
        ("DP7", "Device assignments are kept after the device plugin restarts"),
        ("DP8", "Device assignments are kept after a kubelet restart and then a plugin restart"),
        ("DP9", "Device pods force-deleted while the kubelet is down are cleaned up, with their assignments"),
        (
            "DP10",
            "Init and sidecar containers share a device, the app container gets another",
            {"since": "1.29", "feature": "SidecarContainers"},
        ),
        ("DP11", "After a node reboot with the plugin not registered, the pod fails admission (upstream Flaky)"),
    ),
    *_section(
        "2.2",
        DM_E2E,
        # The pre-1.20 ("v1") checkpoint reader was added in 1.23 and removed in 1.31 (#123398).
        (
            "DM1",
            "A pre-1.20 checkpoint is recovered; pods are rejected until the plugin re-registers (#102880)",
            {"until": "1.30"},
        ),
        (
            "DM2",
            "A pre-1.20 checkpoint is recovered; topology (NUMA IDs) is updated on re-registration",
            {"until": "1.30"},
        ),
        ("DM3", "A device pod fails admission after a reboot when its plugin has not re-registered (#109595)"),
    ),
    *_section(
        "2.3",
        DF_E2E,
        ("DF1", "A failing GetDevicePluginOptions fails the registration; the plugin is never used"),
        ("DF2", "A device turning unhealthy and healthy again moves allocatable, not capacity"),
        ("DF3", "A device turning unhealthy under a running pod does not evict it, nor free up after it"),
        ("DF4", "Allocatable follows the number of healthy devices"),
        ("DF5", "ListAndWatch failing at once: the resource has no devices and is never retried"),
        ("DF6", "ListAndWatch failing after provisioning: allocatable 0 at once, capacity 0 after the grace period"),
        ("DF7", "A plugin stopped after provisioning: allocatable 0 at once, capacity 0 after the grace period"),
    ),
    *_section(
        "2.4",
        DP_HEALTH_E2E,
        (
            "DP-H1",
            "A device turning unhealthy shows in a running pod's allocatedResourcesStatus",
            {"since": "1.31", "feature": HEALTH},
        ),
        (
            "DP-H2",
            "Device health is reported for a pod that is not running (ImagePullBackOff)",
            {"since": "1.31", "feature": HEALTH},
        ),
    ),
    *_section(
        "2.5",
        DP_MULTIPLE_E2E,
        ("DP-M1", "Zero-downtime rollout: a second plugin instance takes over and the first one leaves (#127803)"),
        ("DP-M2", "A second instance failing GetDevicePluginOptions leaves the first one serving"),
        ("DP-M3", "A second instance removed while the first is alive changes nothing"),
    ),
    *_section(
        "2.6",
        DP_ALLOCATION_E2E,
        ("DP-A1", "podresources lists a pod without devices while its Allocate is in flight"),
    ),
    *_section(
        "2.7",
        DP_CRIPROXY_E2E,
        (
            "DP-C1",
            "A running device pod survives a kubelet start whose first CRI listings fail (#118559 variant)",
        ),
    ),
    *_section(
        "2.8",
        DM_UNIT,
        ("DM-U1", "Re-registration: the same devices keep the counts, other devices replace the old ones"),
        ("DM-U2", "Capacity counts all devices, allocatable the healthy; stopped, expired and checkpointed endpoints"),
        ("DM-U3", "The checkpoint round-trips CDI devices, envs, mounts and the NUMA-less key"),
        (
            "DM-U4",
            "devicesToAllocate refuses: no healthy devices, unregistered devices, previously allocated unhealthy ones",
        ),
        ("DM-U5", "Init container devices are reused by app containers, sidecar devices are not"),
        ("DM-U6", "Extended resource capacity is reset only when the checkpoint is absent"),
        ("DM-U7", "A disconnect marks every device unhealthy; expiry empties the endpoint (#133702)"),
        (
            "DM-U8",
            "Instances per socket: duplicates refused, survivor promoted, a late disconnect of a reused socket",
            {"since": "1.37"},
        ),
        (
            "DM-U9",
            "An extended resource backed by DRA is admitted only with DRAExtendedResource",
            {"since": "1.34", "feature": "DRAExtendedResource"},
        ),
        (
            "DM-U10",
            "Device health reaches the pod status only on changes, per container",
            {"since": "1.31", "feature": HEALTH},
        ),
    ),
    *_section(
        "2.9",
        DRA_E2E_NODE,
        ("DRA1", "The driver registers again after a kubelet restart"),
        ("DRA2", "The driver registers again after it restarts"),
        ("DRA3", "Registration recovers after GetInfo failures"),
        ("DRA4", "A pod created while the kubelet is down runs once the kubelet starts"),
        ("DRA5", "A pod stays Pending while NodePrepareResources times out"),
        ("DRA6", "A pod runs once a failing NodePrepareResources succeeds"),
        ("DRA7", "A pod completes once a failing NodeUnprepareResources succeeds"),
        ("DRA8", "NodePrepareResources is retried after a kubelet restart"),
        ("DRA9", "NodeUnprepareResources is retried after a kubelet restart"),
        ("DRA10", "NodeUnprepareResources is called for a deleted pod until it succeeds"),
        ("DRA11", "NodeUnprepareResources is called for a pod deleted across a kubelet restart"),
        ("DRA12", "NodePrepareResources is not called for a pod deleted while the kubelet was down"),
        ("DRA13", "Pods are served when the DRA service socket comes up after registration"),
        ("DRA14", "Pods are served after the DRA service reconnects; slices go while it is away"),
        (
            "DRA15",
            "Serving errors of the registrar and the DRA service are reported",
            {"not_reproducible": GO_HELPER_ONLY},
        ),
        ("DRA16", "The kubelet uses one gRPC connection for all service calls"),
        ("DRA-T1", "Two drivers on one claim: both prepare and unprepare"),
        ("DRA-T2", "dra_resource_claims_in_use per driver and <any> while the pod runs and after"),
        ("DRA-T3", "NodePrepareResources failing for one of two drivers, then succeeding"),
        ("DRA-T4", "NodeUnprepareResources failing for one of two drivers, then succeeding"),
        ("DRA-T5", "NodePrepareResources in progress for one driver across a kubelet restart"),
        ("DRA-T6", "NodeUnprepareResources in progress for one driver across a kubelet restart is called again"),
        ("DRA-S1", "The node's ResourceSlices are removed at kubelet startup, other nodes' are kept"),
        ("DRA-S2", "ResourceSlices are removed after the driver unregisters"),
        ("DRA-S3", "ResourceSlices are removed when the driver stops after registration"),
        ("DRA-S4", "ResourceSlices are removed when the driver is unresponsive after registration"),
        ("DRA-S5", "ResourceSlices survive a driver restart shorter than the wiping delay", {"since": "1.33"}),
        (
            "DRA-H1",
            "Device health Healthy -> Unhealthy -> Healthy shows in the pod status",
            {"since": "1.34", "feature": HEALTH},
        ),
        (
            "DRA-H2",
            "A stopped driver's devices turn Unknown, and Healthy again after its restart",
            {"since": "1.34", "feature": HEALTH},
        ),
        (
            "DRA-H3",
            "Health updates keep flowing after the connection drops and comes back",
            {"since": "1.34", "feature": HEALTH},
        ),
        ("DRA-H4", "Concurrent health updates for three pods are all reflected", {"since": "1.34", "feature": HEALTH}),
        (
            "DRA-H5",
            "The DRA service and the health stream share one gRPC connection",
            {"since": "1.34", "feature": HEALTH},
        ),
        ("DRA-H6", "With ResourceHealthStatus off, pods carry no allocatedResourcesStatus", {"since": "1.34"}),
        (
            "DRA-H7",
            "Allocation results with ShareIDs prepare and unprepare",
            {"since": "1.34", "feature": "DRAConsumableCapacity"},
        ),
        since=DRA_SINCE,
        feature=DRA,
    ),
    *_section(
        "2.10",
        DRA_E2E,
        # "kubelet"
        ("DRA-E1", "The kubelet registers the driver"),
        ("DRA-E2", "NodePrepareResources is retried (v1beta1 and v1 method names failing)"),
        ("DRA-E3", "A pod whose claim is not allocated is not run"),
        ("DRA-E4", "The resources of a force-deleted pod are unprepared"),
        ("DRA-E5", "NodePrepareResources is called even if no container uses the claim"),
        ("DRA-E6", "Configs and devices are mapped to the right containers"),
        (
            "DRA-E7",
            "A force-deleted pod's old claim blocks a new pod of the same names until unprepared (#131513)",
            {"since": "1.34"},
        ),
        ("DRA-E8", "A DaemonSet with admin access runs", {"feature": "DRAAdminAccess"}),
        # "kubelet", per-node resources
        ("DRA-E9", "The driver's ResourceSlices belong to the node (owner Node, pool = node name)"),
        ("DRA-E10", "Init containers with external claims"),
        ("DRA-E11", "The claim's reservation is removed when the pod is done"),
        ("DRA-E12", "Generated claims are deleted when the pod is done"),
        ("DRA-E13", "Generated claims are not deleted while the pod restarts"),
        # "kubelet", individual
        ("DRA-E14", "A pod runs once its driver starts (Unschedulable before)"),
        ("DRA-E15", "Rolling driver update: a new instance with its own socket, slices unchanged", {"since": "1.33"}),
        ("DRA-E16", "Failed driver update: the old instance keeps serving, slices unchanged", {"since": "1.33"}),
        (
            "DRA-E17",
            "Sequential driver update: slices survive a short downtime, are wiped on uninstall",
            {"since": "1.33"},
        ),
        (
            "DRA-E18",
            "The scheduler contexts with the kubelet (single/multi-node, prioritized list, consumable capacity, ...)",
        ),
        # DRADeviceTaints
        (
            "DRA-E19",
            "A NoSchedule device taint keeps the pod Unschedulable",
            {"since": TAINTS_SINCE, "feature": TAINTS},
        ),
        (
            "DRA-E20",
            "A toleration of the NoSchedule taint lets the pod run",
            {"since": TAINTS_SINCE, "feature": TAINTS},
        ),
        (
            "DRA-E21",
            "A NoExecute DeviceTaintRule evicts the pod (DisruptionTarget condition)",
            {"since": TAINTS_SINCE, "feature": TAINTS},
        ),
        # DRAExtendedResource
        (
            "DRA-E22",
            "Extended resources served by DRA give each container its devices",
            {"since": "1.34", "feature": "DRAExtendedResource"},
        ),
        (
            "DRA-E23",
            "In a mixed cluster a device-plugin pod has no extendedResourceClaimStatus",
            {"since": "1.34", "feature": "DRAExtendedResource", "not_reproducible": NEEDS_TWO_NODES},
        ),
        # control plane
        (
            "DRA-E24",
            "The driver on the pod's node writes and updates the claim's device status",
            {"feature": "DRAResourceClaimDeviceStatus"},
        ),
        ("DRA-E25", "Per-node permission checks (ValidatingAdmissionPolicy) for ResourceSlices"),
        ("DRA-E26", "Admin access is validated (namespace label)", {"feature": "DRAAdminAccess"}),
        ("DRA-E27", "ResourceClaim quota"),
        ("DRA-E28", "Generated claim names are truncated"),
        ("DRA-E29", "Several drivers speaking only v1beta1, only v1, or both", {"since": "1.34"}),
        (
            "DRA-E30",
            "Device-declared CPU, memory and hugepages and per-pod/container overhead in cgroup limits",
            {"source": DRA_NODE_ALLOCATABLE_E2E, "since": "1.36", "feature": "DRANodeAllocatableResources"},
        ),
        since=DRA_SINCE,
        feature=DRA,
    ),
    *_section(
        "2.11",
        DRA_UNIT,
        (
            "DRA-U1",
            "PrepareResources: missing claim, unknown driver, nil/empty answer, pod not reserved, unused claim, ...",
        ),
        ("DRA-U2", "UnprepareResources: the same cases; the cache entry goes only on success"),
        ("DRA-U3", "Claim lookups, parallel prepare/unprepare, the health stream and the pod's resource status"),
        since=DRA_SINCE,
        feature=DRA,
    ),
    *_section(
        "2.12",
        DT_UNIT,
        ("DT-U1", "Taints in slices and DeviceTaintRules: NoSchedule ignored, NoExecute evicts, None only reports"),
        ("DT-U2", "Which pods: claims by name, generated and extended-resource claims; not unscheduled or other pods"),
        ("DT-U3", "Tolerations: none evicts at once, tolerationSeconds delays, without seconds never, partial evicts"),
        ("DT-U4", "Removing the taint cancels the eviction; adding it again marks the pod again"),
        ("DT-U5", "DeviceTaintRule status: NotStarted -> PodsPendingEviction -> Completed", {"since": "1.35"}),
        ("DT-U6", "One GET, PATCH and DELETE per evicted pod; metrics; a rule flipped from None to NoExecute"),
        since=TAINTS_SINCE,
        feature=TAINTS,
    ),
    *_section(
        "2.13",
        BEYOND,
        (
            "DP-X1",
            "A device on NUMA node 1 stays on node 1 in the checkpoint and podresources List across a kubelet restart",
            {
                "source": f"{DM_MANAGER} allocateContainerResources; {DM_POD_DEVICES} getContainerDevices, "
                f"fromCheckpointData; {PODRESOURCES} List"
            },
        ),
        (
            "DP-X2",
            "podresources Get answers what List reports for an init container, a sidecar and several app containers",
            {"source": f"{PODRESOURCES} Get, List", "since": "1.34", "feature": "KubeletPodResourcesGet"},
        ),
        (
            "DP-X3",
            "PreStartContainer is called once per container, each time with that container's own devices",
            {"source": f"{DM_MANAGER} GetDeviceRunContainerOptions, callPreStartContainerIfNeeded"},
        ),
        (
            "DP-X4",
            "GetPreferredAllocation for an app container reusing an init device: full size, that device mustInclude",
            {"source": f"{DM_MANAGER} devicesToAllocate, callGetPreferredAllocationIfAvailable"},
        ),
        (
            "DRA-X1",
            "A container naming two requests of one claim gets the devices of both, not those of a third request",
            {"source": f"{DRA_MANAGER} GetResources", "since": DRA_SINCE, "feature": DRA},
        ),
        (
            "DRA-X2",
            "Device health is pushed at once to every pod of a shared claim and of an admin-access claim on the device",
            {
                "source": f"{DRA_MANAGER} HandleWatchResourcesStream",
                "since": "1.36",
                "feature": f"{HEALTH}, DRAAdminAccess",
            },
        ),
        (
            "DRA-X3",
            "Two instances of one driver: the newer serves, and keeps serving after the older one deregisters",
            {"source": f"{DRA_PLUGINS} get, remove", "since": "1.34", "feature": DRA},
        ),
        (
            "DRA-X4",
            "A claim reusing a force-deleted pod's claim name with a new UID is refused, naming the UID (#131513)",
            {"source": f"{DRA_MANAGER} prepareResources", "since": "1.34", "feature": DRA},
        ),
        (
            "DRA-X5",
            "A stopped driver's devices turn Unknown long before a long health-check timeout would run out",
            {
                "source": f"{DRA_MANAGER} HandleWatchResourcesStream; {DRA_HEALTH_INFO} clearDriver",
                "since": "1.36",
                "feature": HEALTH,
            },
        ),
        (
            "DT-X1",
            "A pod scheduled onto an already tainted device counts its tolerationSeconds from the taint's timeAdded",
            {"source": f"{DT_CONTROLLER} claimEvictionTime", "since": "1.35", "feature": TAINTS},
        ),
        (
            "DT-X2",
            "A rule changed from NoExecute to None or NoSchedule cancels the pending eviction for good",
            {"source": f"{DT_CONTROLLER} handleRuleChange, cancelEvict", "since": "1.35", "feature": TAINTS},
        ),
        (
            "DT-X3",
            "A rule switched from None to NoExecute counts tolerationSeconds from the switch",
            {
                "source": f"{DT_RULE_STRATEGY} PrepareForUpdate; {DT_CONTROLLER} trackedTaint.deviceTaint",
                "since": "1.36",
                "feature": TAINTS,
            },
        ),
        (
            "DT-X4",
            "An evicted pod still terminating is not pending: the rule reaches Completed",
            {"source": f"{DT_CONTROLLER} countPendingPods", "since": "1.35", "feature": TAINTS},
        ),
    ),
)

BY_ID: Mapping[str, Scenario] = MappingProxyType({scenario.id: scenario for scenario in SCENARIOS})
SECTION_BY_TAG: Mapping[str, Section] = MappingProxyType({section.tag: section for section in SECTIONS})


def in_section(number: str) -> tuple[Scenario, ...]:
    """The scenarios of section `number` (`2.6`), in catalogue order."""
    return tuple(scenario for scenario in SCENARIOS if scenario.section == number)


def is_known(tag: str) -> bool:
    """Whether a scenario marker may name `tag`: a catalogue ID or a catalogue section (`§2.6`)."""
    return tag in BY_ID or tag in SECTION_BY_TAG


def named_by(tag: str) -> tuple[Scenario, ...]:
    """The scenarios a marker tag counts for: an ID its scenario; a section its only scenario, if it has
    just one; any other section none (it says "a scenario of §2.N", not which)."""
    if tag in BY_ID:
        return (BY_ID[tag],)
    section = SECTION_BY_TAG.get(tag)
    scenarios = in_section(section.number) if section is not None else ()
    return scenarios if len(scenarios) == 1 else ()
