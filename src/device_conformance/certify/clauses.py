"""The contract, clause by clause: each has an ID, a one-line rule and the upstream source it comes from.

Sources are upstream files (kubernetes/kubernetes at the version under test) or specs; the rules
paraphrase them. A clause is checked by exactly one step of device_plugin.py or dra_driver.py.
"""

from __future__ import annotations

from dataclasses import dataclass

DP_API = "staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto"
DP_CONSTANTS = "staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/constants.go"
DP_SERVER = "pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go"
DP_HANDLER = "pkg/kubelet/cm/devicemanager/plugin/v1beta1/handler.go"
DP_MANAGER = "pkg/kubelet/cm/devicemanager/manager.go"
REG_API = "staging/src/k8s.io/kubelet/pkg/apis/pluginregistration/v1/api.proto"
REG_GENERATOR = "pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go"
DRA_API = "staging/src/k8s.io/kubelet/pkg/apis/dra/v1/api.proto"
DRA_REGISTRATION = "pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go (ValidatePlugin) and dra_plugin.go"
DRA_MANAGER = "pkg/kubelet/cm/dra/manager.go"
DRA_KEP = "KEP-4381 (DRA structured parameters)"
CDI_SPEC = "CDI specification v0.6+ (cncf-tags/container-device-interface SPEC.md)"
SLICE_TYPES = "staging/src/k8s.io/api/resource/v1/types.go (ResourceSlice) and pkg/apis/resource/validation"
DRA_HELPER = "staging/src/k8s.io/dynamic-resource-allocation/kubeletplugin/draplugin.go"
# Where the kubelet calls again for a claim failed in an OK answer, without limit (certify/limits.py).
KUBELET_PREPARE_RETRY = (
    "pkg/kubelet/kuberuntime/kuberuntime_manager.go (SyncPod records FailedPrepareDynamicResources and returns "
    "without failing the sync); pkg/kubelet/pod_workers.go (completeWork requeues the pod at the resync, "
    "SyncFrequency 1 min jittered by up to half: 60-90 s)"
)
KUBELET_UNPREPARE_RETRY = (
    "pkg/kubelet/kubelet.go (SyncTerminatingPod fails on UnprepareDynamicResources' error); pkg/kubelet/pod_workers.go "
    "(completeWork retries after the 10 s back-off)"
)
EXAMPLE_DRIVER_CDI = "kubernetes-sigs/dra-example-driver cmd/dra-example-kubeletplugin/cdi.go"
DRA_HEALTH_TYPES = "staging/src/k8s.io/kubelet/pkg/apis/dra-health/v1/types.go"
DRA_HEALTH_API = "staging/src/k8s.io/kubelet/pkg/apis/dra-health/v1/api.proto"
DRA_HELPER_HEALTH = "staging/src/k8s.io/dynamic-resource-allocation/kubeletplugin/health.go"


@dataclass(frozen=True)
class Clause:
    id: str
    title: str
    rule: str
    source: str


DEVICE_PLUGIN_CLAUSES: tuple[Clause, ...] = (
    Clause(
        "DP-REG-VERSION",
        "Register: API version",
        'RegisterRequest.version is "v1beta1", the only version the kubelet supports.',
        f"{DP_CONSTANTS} (Version); {DP_SERVER} (Register: isVersionCompatibleWithPlugin, errUnsupportedVersion)",
    ),
    Clause(
        "DP-REG-ENDPOINT",
        "Register: endpoint",
        "RegisterRequest.endpoint is a socket file name inside the device plugin directory, served before "
        "Register is sent (the kubelet dials it back during Register), its full path within sun_path's 107 bytes.",
        f"{DP_API} (RegisterRequest.endpoint); {DP_SERVER} (Register dials socketDir/endpoint); {DP_HANDLER}; "
        "Linux unix(7) (sun_path)",
    ),
    Clause(
        "DP-REG-RESOURCE",
        "Register: resource name",
        "RegisterRequest.resource_name is a valid extended resource name (domain-qualified, not kubernetes.io), "
        "and the expected one when --resource is given.",
        f"{DP_SERVER} (Register: v1helper.IsExtendedResourceName)",
    ),
    Clause(
        "DP-OPTIONS",
        "GetDevicePluginOptions",
        "GetDevicePluginOptions answers (the kubelet calls it right after Register and uses its answer; options in "
        "RegisterRequest that differ are noted, not failed: the kubelet does not read them).",
        f"{DP_API} (GetDevicePluginOptions); {DP_MANAGER} (PluginConnected calls it and keeps the options it "
        f"answers); {DP_SERVER} (Register reads version, endpoint and resource name only)",
    ),
    Clause(
        "DP-LAW-FIRST",
        "ListAndWatch: first response promptly",
        "ListAndWatch answers at once when opened and settles on the device list: the first non-empty list, or "
        "an empty one a few seconds after the first response (each response replaces the resource's device set, "
        "so an empty list followed by the full one is harmless).",
        f"{DP_API} (ListAndWatch returns a stream of List of Devices); {DP_MANAGER} (genericDeviceUpdateCallback)",
    ),
    Clause(
        "DP-LAW-UNIQUE",
        "ListAndWatch: device IDs unique",
        "Every ListAndWatch response lists each device ID once, and IDs are non-empty.",
        f"{DP_API} (Device.ID: a unique ID for the device); {DP_MANAGER} (devices kept in a set keyed by ID)",
    ),
    Clause(
        "DP-LAW-HEALTH",
        "ListAndWatch: health values",
        'Device.health is exactly "Healthy" or "Unhealthy".',
        f"{DP_CONSTANTS} (Healthy, Unhealthy); {DP_API} (Device.health)",
    ),
    Clause(
        "DP-LAW-TOPOLOGY",
        "ListAndWatch: topology well-formed",
        "Device.topology, when set, lists each NUMA node once with a non-negative ID.",
        f"{DP_API} (TopologyInfo, NUMANode); pkg/kubelet/cm/devicemanager/topology_hints.go",
    ),
    Clause(
        "DP-LAW-STABLE",
        "ListAndWatch: device IDs stable",
        "A second ListAndWatch stream (as after a kubelet restart) settles on the same device IDs as the first.",
        f"{DP_API} (Device.ID); {DP_MANAGER} (checkpointed allocations are matched by device ID)",
    ),
    Clause(
        "DP-ALLOC",
        "Allocate: advertised IDs",
        "Allocate for advertised device IDs succeeds with exactly one ContainerAllocateResponse.",
        f"{DP_API} (Allocate, AllocateResponse.container_responses); {DP_MANAGER} (allocateContainerResources)",
    ),
    Clause(
        "DP-ALLOC-MULTI",
        "Allocate: several containers in one request",
        "An AllocateRequest with several container requests gets one container response per request.",
        f"{DP_API} (AllocateRequest.container_requests, AllocateResponse.container_responses)",
    ),
    Clause(
        "DP-ALLOC-UNKNOWN",
        "Allocate: unknown device ID",
        "Allocate for an ID the plugin never advertised gets an answer (an error is expected), and the plugin "
        "keeps running and serving: no crash, no hang.",
        f"{DP_API} (Allocate); {DP_MANAGER} (an Allocate error fails the pod's admission, not the plugin)",
    ),
    Clause(
        "DP-PREFERRED",
        "GetPreferredAllocation",
        "When advertised: a preference names distinct IDs from the available ones, no more than allocation_size, "
        "including every must-include ID. No preference (an empty answer) or fewer IDs are allowed: the kubelet "
        "picks the rest itself (NOT APPLICABLE when there is no preference to judge).",
        f"{DP_API} (PreferredAllocationRequest: 'calculate a preferred allocation of size allocation_size from them, "
        f"making sure to include ... must_include_deviceIDs'); {DP_MANAGER} (callGetPreferredAllocationIfAvailable, "
        "devicesToAllocate: falls back when no preference or too few devices came)",
    ),
    Clause(
        "DP-PRESTART",
        "PreStartContainer",
        "When advertised (pre_start_required): PreStartContainer for allocated IDs succeeds.",
        f"{DP_API} (PreStartContainer is called before each container start when indicated)",
    ),
    Clause(
        "DP-CONCURRENT",
        "Concurrent RPCs",
        "Several RPCs at once (Allocate, GetDevicePluginOptions, an open ListAndWatch) all get answers; one at a time "
        "is fine (each call waits as long as all of them take).",
        f"{DP_MANAGER} (the ListAndWatch stream stays open while the kubelet calls Allocate at admission); "
        "pkg/kubelet/pod_workers.go (pod workers start containers of different pods at once, each calling "
        "PreStartContainer, while the next pod is admitted)",
    ),
    Clause(
        "DP-REREGISTER",
        "Re-registration after a kubelet restart",
        "When kubelet.sock is removed and re-created (and the plugin's socket deleted, as the kubelet does when it "
        "starts), the plugin registers again.",
        f"{DP_CONSTANTS} (KubeletSocket); {DP_SERVER} (Start: CleanupPluginDirectory removes the sockets); "
        "docs 'Device plugins: handling kubelet restarts'",
    ),
)

DRA_DRIVER_CLAUSES: tuple[Clause, ...] = (
    Clause(
        "DRA-REG-SOCKET",
        "Registration socket",
        "A registration socket appears in the plugins_registry directory and serves pluginregistration.Registration.",
        f"{REG_API}; pkg/kubelet/pluginmanager/pluginwatcher/plugin_watcher.go",
    ),
    Clause(
        "DRA-REG-INFO",
        "GetInfo",
        'GetInfo answers within the kubelet\'s 1 s: type "DRAPlugin", name = the driver name, an absolute endpoint or '
        "none (optional: the kubelet then uses the registration socket), and supported versions including a DRA "
        "service the kubelet speaks (v1.DRAPlugin or v1beta1.DRAPlugin).",
        f"{REG_API} (PluginInfo); {REG_GENERATOR} (GetInfo deadline); {DRA_REGISTRATION} (ValidatePlugin)",
    ),
    Clause(
        "DRA-REG-NOTIFY",
        "NotifyRegistrationStatus",
        "NotifyRegistrationStatus is answered (success and failure reports alike) within the kubelet's 5 s. The tool "
        "sends plugin_registered=True after every (re)start once GetInfo answers, as the kubelet notifies every "
        "registration socket it registers.",
        f"{REG_API} (NotifyRegistrationStatus); {REG_GENERATOR} (GenerateRegisterPluginFunc -> notifyPlugin)",
    ),
    Clause(
        "DRA-SERVICE",
        "DRA service on the endpoint",
        "After NotifyRegistrationStatus, the endpoint from GetInfo serves the advertised DRAPlugin service within "
        "30 s (an empty NodePrepareResources answers with no claims); it need not exist before the notification.",
        f"{DRA_API} (service DRAPlugin); {DRA_REGISTRATION} (RegisterPlugin connects lazily, calls come later)",
    ),
    Clause(
        "DRA-HEALTH",
        "DRAResourceHealth (optional)",
        "Each DRAResourceHealth version the driver advertises (v1.DRAResourceHealth, v1alpha1.DRAResourceHealth) is "
        "served on its endpoint: NodeWatchResources sends reports or declines at once with UNIMPLEMENTED (no health "
        "to report; the kubelet stops watching). A stream that fails otherwise in every call, 5 s apart, for 30 s "
        "leaves the kubelet without health. Every device a report names has a pool and a device name.",
        f"{DRA_HEALTH_TYPES} (DRAResourceHealthService: listed by a plugin which provides an implementation); "
        f"{DRA_HEALTH_API} (DeviceIdentifier); pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go (add: calls again "
        "every 5 s, stops on Unimplemented); pkg/kubelet/cm/dra/healthinfo.go (DefaultHealthTimeout 30 s); "
        f"{DRA_HELPER_HEALTH} (ErrHealthNotSupported)",
    ),
    Clause(
        "DRA-PREPARE",
        "NodePrepareResources",
        "Preparing an allocated claim answers that claim with no error and zero or more devices (zero passes with a "
        "note), each with pool and device name and fully qualified CDI device IDs (none is valid); when --claims "
        "names the allocated devices, a non-empty answer names exactly those. A claim failed in an OK answer is "
        "called again, as the kubelet calls again at every pod sync (60-90 s apart, without limit): after 2 s, then "
        "ever further apart (at most 30 s), and its error is the verdict only if it still fails 180 s after the "
        "first call (the kubelet's first two resyncs after the failure; then the FAIL says how many answers over "
        "how long failed it). So for every clause that prepares or unprepares a claim the driver knows; a claim "
        "given up on that has not succeeded since is not waited for again.",
        f"{DRA_API} (NodePrepareResourceResponse.devices: 'each request may have zero or more devices'; "
        f"Device.cdi_device_ids: 'None is also valid'; NodePrepareResourceResponse.error: 'If non-empty, preparing "
        f"the ResourceClaim failed'); {DRA_MANAGER} (Manager.prepareResources records result.GetDevices() as "
        f"answered); {KUBELET_PREPARE_RETRY}",
    ),
    Clause(
        "DRA-PREPARE-IDEMPOTENT",
        "NodePrepareResources idempotent",
        "Preparing the same claim again gives the same result (the kubelet retries and re-prepares after its "
        "own restart); kubernetes-sigs/dra-driver-cpu#175 and NVIDIA/k8s-dra-driver-gpu#782 broke this.",
        f"{DRA_API}; {DRA_MANAGER} (PrepareResources calls again for claims not known prepared); {DRA_HELPER} "
        '(PrepareResourceClaims: "This call must be idempotent because the kubelet might have to ask for preparation '
        'multiple times")',
    ),
    Clause(
        "DRA-PREPARE-MULTI",
        "Several claims in one call, one failing",
        "NodePrepareResources with an allocated claim and a made-up one either fails as a whole with a gRPC error "
        "(not a hang or a lost connection) or answers every claim by UID with an error for the made-up one. FAIL: "
        "the made-up claim answered as prepared without error, a claim missing from a successful answer, or UIDs "
        "nobody asked for.",
        f"{DRA_API} (service DRAPlugin: 'If an error is returned, the response is ignored'; "
        "NodePrepareResourcesResponse.claims: 'NodePrepareResources will be called again for those that are "
        f"missing'); {DRA_MANAGER} (Manager.prepareResources fails the pod's prepare on any claim's error, on "
        f"'skipped %d ResourceClaims' and on 'result for unknown claim UID'); {DRA_HELPER} "
        "(nodePluginImplementation.NodePrepareResources fails the whole call when getResourceClaims cannot read one)",
    ),
    Clause(
        "DRA-CDI-VALID",
        "CDI spec files valid",
        "The CDI spec files the driver writes are valid (cdiVersion, kind vendor/class, device names, edits), "
        "and every CDI device ID it returns resolves to exactly one device (no duplicates); NOT APPLICABLE when "
        "it answers no CDI device IDs.",
        f"{CDI_SPEC}; {DRA_API} (Device.cdi_device_ids)",
    ),
    Clause(
        "DRA-UNPREPARE",
        "NodeUnprepareResources",
        "Unpreparing prepared claims answers each claim with no error; a claim failed in an OK answer is called "
        "again as in DRA-PREPARE (the kubelet calls again at every sync of the terminating pod).",
        f"{DRA_API} (NodeUnprepareResourcesResponse); {KUBELET_UNPREPARE_RETRY}",
    ),
    Clause(
        "DRA-CDI-REMOVED",
        "CDI devices removed on unprepare",
        "After unprepare, none of the claim-specific CDI device IDs resolves any more in the CDI spec directory. An "
        "ID is claim-specific unless another prepared claim lists it or it was defined before the first prepare; "
        "shared and static ones may stay (evidence notes).",
        f"{EXAMPLE_DRIVER_CDI} (DeleteClaimSpecFile on unprepare; CreateCommonSpecFile at start-up, listed by "
        f"GetClaimDevices for every claim, never removed); {CDI_SPEC}; {DRA_KEP} (the driver cleans up what it "
        "prepared for the claim)",
    ),
    Clause(
        "DRA-UNPREPARE-IDEMPOTENT",
        "NodeUnprepareResources idempotent",
        "Unpreparing an already unprepared claim succeeds (the kubelet retries until it sees success).",
        f'{DRA_API}; {DRA_MANAGER} (UnprepareResources is retried); {DRA_HELPER} (UnprepareResourceClaims: "This '
        "call must be idempotent ... it is not an error if this gets called for a ResourceClaim which is not currently "
        'prepared")',
    ),
    Clause(
        "DRA-UNPREPARE-UNKNOWN",
        "NodeUnprepareResources for an unknown claim",
        "Unpreparing a claim the driver never prepared succeeds (the kubelet unprepares checkpointed claims "
        "after restarts).",
        f"{DRA_API}; {DRA_MANAGER} (reconcile loop unprepares claims from its checkpoint); {DRA_HELPER} "
        '(UnprepareResourceClaims: "it is not an error if this gets called for a ResourceClaim which is not '
        'currently prepared")',
    ),
    Clause(
        "DRA-RESTART",
        "Prepare after a driver restart",
        "A claim prepared before the driver restarts is prepared again afterwards with the same result (zero "
        "devices included), once the restarted driver is registered again and notified; given two claims, the "
        "second is prepared in the same call, as the kubelet sends a pod's claims for one driver together.",
        f"{DRA_MANAGER} (claims stay prepared in the kubelet's checkpoint across driver restarts; "
        f"Manager.prepareResources sends one call per driver, `batches`); {REG_GENERATOR} "
        f"(GenerateRegisterPluginFunc notifies the new socket); {DRA_KEP}; kubernetes#141966 (prepare again after a "
        "restart must be idempotent)",
    ),
    Clause(
        "DRA-SLICES",
        "ResourceSlices valid",
        "The driver's ResourceSlices serving the node are there and valid (names, driver, pool name and "
        "generation, the pool's resourceSliceCount over all its slices, device names unique, attributes and "
        "capacities well-formed, taints well-formed) before the restart and after it, each polled for up to 30 s. "
        "A slice serves the node by spec.nodeName, spec.allNodes, a spec.nodeSelector matching the Node's labels, "
        "or with spec.perDeviceNodeSelection one device's own; read in the newest resource.k8s.io version served "
        "(v1, v1beta2, v1beta1). A slice selecting by label when the Node cannot be read is not judged (a note; "
        "NOT APPLICABLE when no other slice serves the node).",
        f"{SLICE_TYPES} (ResourceSliceSpec: exactly one of nodeName, nodeSelector, allNodes, "
        "perDeviceNodeSelection); staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/"
        f"pools_stable.go (GatherPools, nodeMatches); {DRA_MANAGER} (defaultWipingDelay = 30 s: how long the "
        "kubelet keeps a gone driver's slices, 'long enough for a simple container restart')",
    ),
)

BY_ID: dict[str, Clause] = {c.id: c for c in (*DEVICE_PLUGIN_CLAUSES, *DRA_DRIVER_CLAUSES)}

# Behaviours of real DRA drivers the API allows, each a pattern of our fake (fakes/dra_driver/config.py PATTERNS,
# tests/certify/test_certify_dra_patterns.py), and the DRA clauses they pass on account of it.
DRA_PATTERNS_PASSED: dict[str, str] = {
    "DRA-REG-INFO": "`health-not-supported` (advertises v1 and v1alpha1 DRAResourceHealth besides the DRA services, "
    "as the kubeletplugin helper does from v0.37 for every driver); `dra-on-registration-socket` (GetInfo names no "
    "endpoint: the DRA service is on the registration socket, where the kubelet then calls)",
    "DRA-HEALTH": "NOT APPLICABLE for `health-not-supported` (every stream declined with UNIMPLEMENTED, as the "
    "kubeletplugin helper answers for a driver without health)",
    "DRA-REG-NOTIFY": "`serve-after-notify` (serves only once notified: notified after every start)",
    "DRA-SERVICE": "`serve-after-notify` (endpoint absent until the notification)",
    "DRA-PREPARE": "`prepare-no-devices` (NRI drivers: zero devices, a note); `cdi-common-device` and "
    "`cdi-static-per-device` (CDI IDs that are no claim's own); `claim-error-once` (a claim failed in an OK answer "
    "is called again, as the kubelet does); `claim-error-for-a-while` (each claim failed for 12 s: called again "
    "until it succeeds, as the kubelet does at every pod sync)",
    "DRA-PREPARE-MULTI": "`fetch-claims-first` (kubeletplugin: the whole call fails with a gRPC error); a per-claim "
    "error for the made-up claim only, or for both claims",
    "DRA-CDI-VALID": "`cdi-common-device`, `cdi-static-per-device`; NOT APPLICABLE for `prepare-no-devices`",
    "DRA-UNPREPARE": "`claim-error-once`, `claim-error-for-a-while` (a failed unprepare is called again until it "
    "succeeds)",
    "DRA-CDI-REMOVED": "`cdi-common-device`, `cdi-static-per-device` (shared or static IDs are notes); NOT "
    "APPLICABLE for `prepare-no-devices`",
    "DRA-UNPREPARE-UNKNOWN": "`claim-error-for-a-while` (the made-up claim is failed for 12 s, then unprepared)",
    "DRA-RESTART": "`serve-after-notify` (notified after the restart), `prepare-no-devices` (zero devices both times), "
    "`claim-error-for-a-while` (the restarted driver fails both claims for 12 s)",
    "DRA-SLICES": "`serve-after-notify` (publishes after the notification: polled for, needs --kubeconfig)",
}

# Behaviours of real device plugins the API allows, each a pattern of our fake (fakes/device_plugin/config.py
# PATTERNS, tests/certify/test_certify_device_plugin_patterns.py), and the clauses they pass on account of it.
DEVICE_PLUGIN_PATTERNS_PASSED: dict[str, str] = {
    "DP-REG-RESOURCE": "`another-resource-first` (one process registers a second resource before the one asked for, "
    "each on a socket of its own, as NVIDIA k8s-device-plugin does with a mixed MIG strategy: judged on --resource's "
    "registration, the other noted)",
    "DP-REREGISTER": "`another-resource-first` (after the kubelet restart, the registration of --resource counts)",
    "DP-OPTIONS": "`register-without-options` (RegisterRequest without options, GetDevicePluginOptions answering "
    "them: the kubelet reads only the answer)",
    "DP-PREFERRED": "`list-empty-then-full`; NOT APPLICABLE for `no-preference` (an empty answer, as upstream's "
    "stub gives by default: the kubelet picks the devices itself)",
    "DP-REG-ENDPOINT": "`long-socket-name` (a 60-character endpoint: judged by the kubelet's own path within sun_path, "
    "not the test host's)",
    "DP-LAW-TOPOLOGY": "`device-on-two-numa-nodes` (a device whose topology names two NUMA nodes, each once)",
    "DP-LAW-FIRST": "`list-empty-then-full` (an empty first response, the full list a moment later: judged on the "
    "settled list, as the kubelet replaces the device set with each response)",
    "DP-LAW-STABLE": "`list-empty-then-full` (both streams settle on the same IDs)",
    "DP-ALLOC": "`list-empty-then-full` (judged, not NOT APPLICABLE: the settled list has devices)",
    "DP-ALLOC-MULTI": "`list-empty-then-full`",
    "DP-CONCURRENT": "`list-empty-then-full`",
}


def markdown() -> str:
    """docs/certify-clauses.md: the whole catalogue, one table per kind of subject."""
    out = [
        "# Certification clauses",
        "",
        "Generated by `device-conformance certify clauses` (`make docs` rewrites it); `device-conformance certify`",
        "checks each clause and reports it PASS, FAIL or NOT APPLICABLE with its evidence.",
    ]
    for title, clauses in (("Device plugin", DEVICE_PLUGIN_CLAUSES), ("DRA driver", DRA_DRIVER_CLAUSES)):
        out += ["", f"## {title}", "", "| ID | Clause | Rule | Source |", "|---|---|---|---|"]
        out += [f"| {c.id} | {c.title} | {c.rule} | {c.source} |" for c in clauses]
    for title, passed in (("Device plugin", DEVICE_PLUGIN_PATTERNS_PASSED), ("DRA driver", DRA_PATTERNS_PASSED)):
        out += ["", f"## {title}: real-world patterns each clause passes", "", "| ID | Patterns |", "|---|---|"]
        out += [f"| {clause} | {patterns} |" for clause, patterns in passed.items()]
    return "\n".join(out) + "\n"
