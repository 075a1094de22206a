"""DRA and device-taint facts per Kubernetes release, as data. Every entry names its upstream source.

"Module source vX.Y.Z" means the k8s.io/kubernetes (or staging module, e.g. k8s.io/dynamic-resource-allocation
v0.Y.Z) module zip of that release from the Go module proxy; CHANGELOG-1.NN.md is the file of that name there.
A fix names the first tag that carries it: the oldest release heading of CHANGELOG-1.NN.md that names its PR (a
pre-release such as v1.37.0-rc.0 for a mainline change), read in the v1.38.0-beta.0 zip unless said otherwise;
`device-conformance bugs verify` checks them against the notes.
"""

from __future__ import annotations

from collections.abc import Sequence

from device_conformance.core import timeouts
from device_conformance.expectations.behaviour import (
    CONTROLLER_MANAGER,
    SCHEDULER,
    Behaviour,
    Fix,
    KnownBug,
    Since,
    outcome,
)
from device_conformance.expectations.versions import KubeVersion

# The suites' DRA objects need resource.k8s.io/v1beta1 at least: first served in 1.32 (module source
# v1.32.13 pkg/registry/resource/rest/storage_resource.go; 1.31 serves v1alpha3, 1.27-1.30 v1alpha2).
FIRST_DRA_MINOR = 32
# Device taints, DeviceTaintRule and the device-taint eviction controller: DRADeviceTaints, alpha in 1.33
# (PR #130447, CHANGELOG-1.33 v1.33.0; the gate is unknown to 1.32).
FIRST_DEVICE_TAINTS_MINOR = 33


def supports_dra(version: KubeVersion) -> bool:
    """Whether the suites' DRA tests can run on `version` (see FIRST_DRA_MINOR)."""
    return version.at_least(FIRST_DRA_MINOR)


def has_device_taints(version: KubeVersion) -> bool:
    """Whether `version` has device taints and DeviceTaintRules (see FIRST_DEVICE_TAINTS_MINOR)."""
    return version.at_least(FIRST_DEVICE_TAINTS_MINOR)


def resource_api_version(version: KubeVersion) -> str:
    """The resource.k8s.io version for claims, slices and classes: v1 is GA and served from 1.34 (KEP-4381);
    1.32-1.33 need v1beta1 (enabled by expectations/cluster.py). Older releases have no version our
    objects fit."""
    if not supports_dra(version):
        raise LookupError(
            f"Kubernetes {version} serves no resource.k8s.io version the DRA suites can use "
            f"(v1beta1 and later, from 1.{FIRST_DRA_MINOR})"
        )
    return "resource.k8s.io/v1" if version.at_least(34) else "resource.k8s.io/v1beta1"


def device_taint_rule_api_version(version: KubeVersion) -> str:
    """DeviceTaintRule: v1alpha3 in 1.33-1.35, v1beta2 in 1.36, v1 (GA, DRADeviceTaintRules on) in 1.37
    (k8s.io/api v0.37.1 resource/v1/types.go; storage_resource.go of each release). Releases before 1.33
    have no DeviceTaintRule (has_device_taints); the answer for them is the alpha version that 1.33 added
    it to, so that fixtures of DRA tests without taints still build."""
    if version.at_least(37):
        return "resource.k8s.io/v1"
    if version.at_least(36):
        return "resource.k8s.io/v1beta2"
    return "resource.k8s.io/v1alpha3"


# Effect `None` and DeviceTaintRule status conditions (kubernetes#134152, CHANGELOG-1.35 v1.35.0).
FIRST_NONE_TAINT_EFFECT_MINOR = 35


def has_none_taint_effect(version: KubeVersion) -> bool:
    """Effect `None` and DeviceTaintRule status conditions came with 1.35 (see FIRST_NONE_TAINT_EFFECT_MINOR)."""
    return version.at_least(FIRST_NONE_TAINT_EFFECT_MINOR)


# Seamless DRA driver updates (kubernetes#129832, in 1.33): the kubelet keeps several
# registrations of one driver (a rolling update's second instance on sockets of its own, the kubeletplugin
# helper's RollingUpdate option from k8s.io/dynamic-resource-allocation v0.33) and wipes the driver's
# ResourceSlices only after its last plugin has been gone for the wiping delay. Upstream runs its "rolling
# update", "failed update" and "sequential update" e2e tests with KubeletMinVersion 1.33 (test/e2e/dra/dra.go:
# "Seamless upgrade support was added in Kubernetes 1.33").
# The 1.32 kubelet wipes a driver's slices at once when it deregisters (module source v1.32.5
# pkg/kubelet/cm/dra/plugin/registration.go DeRegisterPlugin: `go h.wipeResourceSlices(pluginName)`), and a restarted
# driver's new slices can be deleted by that wipe; the wiping delay and its cancellation on RegisterPlugin came with
# the same change (v1.33.13 registration.go pendingWipes).
FIRST_SEAMLESS_DRIVER_UPDATE_MINOR = 33


# The kubelet's dra_resource_claims_in_use gauge (per driver_name and "<any>"): kubernetes#131641, opened
# 2025-05-07 after the 1.33.0 release and merged for 1.34 (inferred from the PR's dates; the metric is in
# module source v1.37.1 pkg/kubelet/metrics/metrics.go).
FIRST_CLAIMS_IN_USE_METRIC_MINOR = 34


# The kubelet watches each DRA driver's gRPC connection, logs "Connection changed ... connected=<bool>" (-v=2) and
# wipes the driver's ResourceSlices once it has been disconnected (killed, crashed, service never up) for the
# wiping delay: PR #132058 ("clean up ResourceSlices in some additional failure scenarios (driver was removed
# forcibly or crashed and did not restart)"), CHANGELOG-1.34 v1.34.0, not in CHANGELOG-1.33 (to v1.33.13). Module
# source v1.34.10 pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go; v1.33.13 wipes only when the registration
# socket goes (plugin/registration.go DeRegisterPlugin) and logs no connection changes.
FIRST_DRA_CONNECTION_MONITORING_MINOR = 34

# podresources List reports a container's DRA claims (dynamic_resources) only with KubeletPodResourcesDynamicResources,
# alpha and off from 1.27, beta and on from 1.34 (PR #132940, CHANGELOG-1.34; module source v1.33.13 and v1.34.10
# pkg/features/kube_features.go). expectations/cluster.py does not turn the alpha gate on.
FIRST_PODRESOURCES_DRA_MINOR = 34


# Partitionable devices (KEP-4815): ResourceSlice sharedCounters and Device consumesCounters, gate
# DRAPartitionableDevices, alpha and off from 1.33, beta and on by default from 1.36 (module source v1.37.1
# pkg/features/kube_features.go). From 1.35 a slice holds either devices or sharedCounters, never both
# (KEP update kubernetes/enhancements#5515; "only one of `sharedCounters` or `devices` is allowed",
# kubernetes-sigs/dra-driver-nvidia-gpu#859; k8s.io/api v0.37.1 resource/v1/types.go ResourceSliceSpec), so
# the fake driver publishes them apart. expectations/cluster.py does not turn the alpha gate on, so the
# suite checks partitions from 1.36.
PARTITIONABLE_DEVICES_SINCE = "1.36"


# Device health in containerStatuses[].allocatedResourcesStatus (KEP-4680): gate ResourceHealthStatus, alpha
# and off from 1.31, beta and on by default from 1.36 (module source v1.36.4 pkg/features/kube_features.go).
# expectations/cluster.py does not turn the alpha gate on, so the suite checks it from 1.36.
FIRST_RESOURCE_HEALTH_STATUS_MINOR = 36

# Which DRAResourceHealth API versions the kubelet opens a driver's health stream on, in its order of preference.
# None before PR #130606 (CHANGELOG-1.34 v1.34.0-rc.0: "requires the DRA plugin to implement the new v1alpha1
# NodeHealth gRPC service"; no health client in module source v1.33.13 pkg/kubelet/cm/dra/plugin). Then v1alpha1
# alone (module source v1.34.10 and v1.36.5 dra_plugin.go NodeWatchResources: a drahealthv1alpha1 client). From PR
# #139477 (CHANGELOG-1.37 v1.37.0-rc.0: "The kubelet prefers v1 and, for three releases of transition, still
# consumes v1alpha1 from drivers that shipped before v1 existed"), the first of v1, v1alpha1 that the driver
# advertised (module source v1.37.2 and v1.38.0-beta.0 dra_plugin.go healthServicesSupportedByKubelet; "remove
# v1alpha1 in 1.40"). The kubeletplugin helper serves both from k8s.io/dynamic-resource-allocation v0.37.
HEALTH_APIS_NONE = "none"
HEALTH_APIS_V1ALPHA1 = "v1alpha1"
HEALTH_APIS_V1_THEN_V1ALPHA1 = "v1, then v1alpha1"
HEALTH_API_PREFERENCE = Behaviour(
    "DRAResourceHealth versions the kubelet opens a driver's health stream on",
    (
        Since("1.28.0", HEALTH_APIS_NONE, "no DRAResourceHealth client in pkg/kubelet/cm/dra/plugin"),
        Since("1.34.0-rc.0", HEALTH_APIS_V1ALPHA1, "kubernetes#130606"),
        Since("1.37.0-rc.0", HEALTH_APIS_V1_THEN_V1ALPHA1, "kubernetes#139477"),
    ),
)
_HEALTH_APIS = {
    HEALTH_APIS_NONE: (),
    HEALTH_APIS_V1ALPHA1: ("v1alpha1",),
    HEALTH_APIS_V1_THEN_V1ALPHA1: ("v1", "v1alpha1"),
}


def health_api_opened(version: KubeVersion, served: Sequence[str]) -> str | None:
    """The DRAResourceHealth version (v1, v1alpha1) a `version` kubelet opens the stream of a driver advertising
    `served` on, or None when it knows none of them (HEALTH_API_PREFERENCE)."""
    known = _HEALTH_APIS[outcome(HEALTH_API_PREFERENCE, version)]
    return next((api for api in known if api in served), None)


# A claim's NoExecute toleration was not copied into the allocation result, so the eviction controller
# (which reads allocation.devices.results[].tolerations) evicted a tolerating pod at once (#134434: "Kubernetes
# >= 1.33 where the feature was introduced"). Fix PR #134479: CHANGELOG-1.35 v1.35.0-alpha.2; the allocator in
# k8s.io/dynamic-resource-allocation v0.35.0 sets Tolerations in the results (incubating and experimental
# allocators, the ones used with DRADeviceTaints on), v0.33.13, v0.34.4 and v0.34.12 do not. No cherry-pick:
# none in CHANGELOG-1.33 (to 1.33.12) or CHANGELOG-1.34 (to 1.34.11), none found in the issue tracker.
NOEXECUTE_TOLERATION_IGNORED = KnownBug(
    issue="kubernetes#134434",
    title="a pod whose claim tolerates a NoExecute device taint is evicted at once",
    first_affected="1.33.0",
    fixes=(Fix("1.35.0-alpha.2", "kubernetes#134479"),),
    shown_by=(
        "suites/taints/test_device_taints.py::test_toleration_seconds_delay_the_eviction, "
        "::test_removing_the_taint_first_cancels_the_eviction; suites/taints/test_eviction_breadth.py::"
        "test_rule_evicts_a_pod_that_tolerates_the_slice_taint, ::test_toleration_seconds_count_from_the_taints_"
        "time_added, ::test_taint_put_back_after_a_cancelled_eviction_evicts_again, "
        "::test_toleration_without_seconds_is_never_evicted"
    ),
    component=CONTROLLER_MANAGER,  # the device-taint eviction controller
)

# devicetainteviction handlePods returned (instead of continuing) on a stale status.reservedFor entry (pod gone,
# or UID mismatch), so later consumers of a shared claim were not evicted. PR #135686 (no issue filed; closed
# unmerged) proposed the fix. Read in module source pkg/controller/devicetainteviction/device_taint_eviction.go
# handlePods: `return` in v1.33.13, v1.34.4, v1.34.12, v1.35.0, v1.35.4 and v1.35.8; `continue` in v1.36.4,
# v1.36.5 and v1.37.1, where the loop became a switch for PodGroup consumers. That rewrite is most likely
# PR #136989 (KEP-5729 PodGroup claims, CHANGELOG-1.36 v1.36.0-rc.0, its first heading), not confirmed from its
# diff.
SHARED_CLAIM_STALE_CONSUMER_EVICTION = KnownBug(
    issue="kubernetes#135686",
    title="device taint eviction skips later consumers of a shared claim after a stale reservedFor entry",
    first_affected="1.33.0",  # the device-taint eviction controller came with DRADeviceTaints (alpha, 1.33)
    fixes=(Fix("1.36.0-rc.0", "kubernetes#136989 (probably; handlePods continues past stale entries from 1.36.0)"),),
    shown_by="suites/taints/test_taint_shared_claim_eviction.py::test_consumers_after_a_stale_reservation_are_evicted",
    component=CONTROLLER_MANAGER,  # the device-taint eviction controller
)


# The 1.33-1.34 device-taint eviction controller records its "DeviceTaintManagerEviction" / "Marking for deletion"
# pod event for the first pod it evicts in its lifetime only: deletePodHandler hands addConditionAndDeletePod a
# pointer to its own emitEventFunc parameter, shared by every later call, and addConditionAndDeletePod sets it to
# nil after the first event ("Emit the event only once"). Read in module source
# pkg/controller/devicetainteviction/device_taint_eviction.go: `*emitEventFunc = nil` in v1.33.13, v1.34.0,
# v1.34.3, v1.34.10, v1.34.11 and v1.34.12; in v1.35.0, v1.36.4 and v1.37.1 addConditionAndDeletePod is a method
# that calls tc.emitPodDeletionEvent for every pod it deletes. Event reason and messages are the same in all of
# them. The rewrite onto a workqueue is most likely PR #134152 (DeviceTaintRule status and effect None,
# CHANGELOG-1.35 v1.35.0-alpha.3, its first heading; its review threads show the workqueue), not confirmed from
# its diff. No issue filed: the report is docs/findings/eviction-event-for-first-pod-only.md (for the record: 1.33
# is past its end of life; a 1.34 patch release is the only place left for a fix).
EVICTION_EVENT_FOR_FIRST_POD_ONLY = KnownBug(
    issue="kubernetes#134152",
    title="the device-taint eviction controller records the eviction event of the first pod it evicts only",
    first_affected=f"1.{FIRST_DEVICE_TAINTS_MINOR}.0",  # the controller came with DRADeviceTaints (PR #130447)
    fixes=(Fix("1.35.0-alpha.3", "kubernetes#134152 (probably; every eviction has its event from 1.35.0)"),),
    shown_by="suites/taints/test_device_taints.py::test_noexecute_taint_in_resourceslice_evicts_the_pod",
    component=CONTROLLER_MANAGER,  # the device-taint eviction controller
    finding="eviction-event-for-first-pod-only",
)


# podresources List and Get give each device of a claim its own ClaimResource, but GetDynamicResources
# (pkg/kubelet/cm/container_manager_linux.go) declares the CDI device list once per driver (`var cdiDevices` above
# `for _, device := range driverState.Devices`) and appends each device's CDI IDs to it, so every device after the
# first is listed with the CDI IDs of the driver's earlier devices in the claim and then its own. Found by this
# suite (two devices in one claim, one driver); not reported upstream, the report is docs/findings/
# podresources-repeats-earlier-cdi-ids.md. Read
# in module source: the per-device loop with the shared list is in v1.31.0 (where structured parameters brought
# DriverState.Devices; the field was CDIDevices until 1.34), v1.31.4, v1.32.5, v1.32.13, v1.33.13, v1.34.10,
# v1.34.12, v1.35.8, v1.36.4, v1.36.5, v1.37.1, v1.37.2 and v1.38.0-beta.0 (master of 2026-11-06); v1.30.14 lists
# one ClaimResource of CDI devices per kubelet plugin (classic DRA), no per-device entries. No fix released. DRA in
# podresources (KubeletPodResourcesDynamicResources) is beta and on from 1.34 (FIRST_PODRESOURCES_DRA_MINOR): before,
# only clusters that turned the gate on show it.
PODRESOURCES_REPEATS_EARLIER_CDI_IDS = KnownBug(
    issue="finding:podresources-repeats-earlier-cdi-ids",
    title="podresources lists each later device of a claim with the CDI IDs of the claim's earlier devices too",
    first_affected="1.31.0",
    shown_by="suites/dra/test_dra_podresources.py::test_each_device_of_a_claim_is_listed_with_only_its_own_cdi_ids",
)


# Kept for the suites not yet moved to device_conformance.core.timeouts (which explains the value).
CLAIM_POD_START_TIMEOUT = timeouts.CLAIM_POD_START


# prepareResources found the claim's cache entry prepared and attached a new pod to it while
# unprepareResources, which drops the cache lock around NodeUnprepareResources, was tearing the claim down:
# the pod ran on unprepared devices. Fix PR #140527 ("kubelet/dra: fail prepareResources on a claim being
# unprepared", no issue; CHANGELOG-1.37 v1.37.0-beta.0): the `unpreparing` flag of ClaimInfo is in module source v1.37.1
# pkg/kubelet/cm/dra/claiminfo.go, not in v1.36.4. No cherry-pick known. First affected not pinned down: set
# to the first release the DRA suites run on; the lock-free NodeUnprepareResources call is in v1.36.4.
PREPARE_JOINS_UNPREPARING_CLAIM = KnownBug(
    issue="kubernetes#140527",
    title="a pod is attached to a shared claim the kubelet is unpreparing and runs on unprepared devices",
    first_affected=f"1.{FIRST_DRA_MINOR}.0",
    fixes=(Fix("1.37.0-beta.0", "kubernetes#140527"),),
    shown_by="suites/dra/test_dra_races.py::test_pod_does_not_join_a_claim_while_it_is_unprepared",
)

# A force-deleted pod's claim, deleted too and re-created under the same name with a new UID, was taken for
# the old one, still prepared (NodeUnprepareResources failing): the new pod ran on the old claim's devices
# and GetResources failed (#131513). PR #131617 ("DRA: kubelet: check for duplicate claim names") refuses
# the prepare ("old ResourceClaim with same name ... still exists"); upstream e2e test/e2e/dra/dra.go runs
# it with KubeletMinVersion 1.34. Not in 1.33 (kubernetes#131513 closed for master only). No release note names
# #131617 (CHANGELOG-1.34 to v1.34.13), so 1.34.0 is from the e2e test and the reproduction (1.33.13 / 1.34.10).
# 1.32 affected: module source v1.32.5, v1.32.9, v1.32.13 and v1.33.13 pkg/kubelet/cm/dra/manager.go prepareResources
# compare no UID (the entry found by name gets addPodReference), v1.34.0 and v1.34.12 do; no release note of
# CHANGELOG-1.32 (to v1.32.13) or 1.33 names a cherry-pick. Reproduced on 1.32.9 and 1.33.13 (2026-11-28).
FORCE_DELETED_CLAIM_NAME_REUSED = KnownBug(
    issue="kubernetes#131513",
    title="a new claim with the name of a force-deleted pod's prepared claim is taken for the old one",
    first_affected=f"1.{FIRST_DRA_MINOR}.0",
    fixes=(
        Fix(
            "1.34.0",
            "kubernetes#131617",
            source="upstream e2e test/e2e/dra/dra.go runs its test with KubeletMinVersion 1.34 (module source "
            "v1.34.10); reproduced on 1.33.13, fixed on 1.34.10; no release note",
        ),
    ),
    shown_by="suites/dra/test_dra_races.py::test_force_deleted_pods_old_claim_blocks_a_new_claim_of_the_same_name",
)

# The device-taint eviction controller looks for a pod's claims in pod.spec.resourceClaims only
# (podEvictionTime, pkg/controller/devicetainteviction/device_taint_eviction.go, module source v1.37.1 and
# v1.36.4), so a pod whose devices came through a DRA extended resource (its claim named in
# status.extendedResourceClaimStatus) is never evicted (#141290; seen on 1.36.1 and 1.36.3; PR #141297 closed
# unmerged). Fixed by PR #142289 ("Fixed a bug where NoExecute device taints (DeviceTaintRule) did not evict pods
# using DRA-backed extended resources"): CHANGELOG-1.38 v1.38.0-alpha.1; cherry-pick #142492 in CHANGELOG-1.37
# v1.37.2 (both read in the v1.38.0-beta.0 zip). No release note of 1.34-1.36 names either (CHANGELOG-1.34 to
# v1.34.13, 1.35 to v1.35.10, 1.36 to v1.36.6). First affected: 1.34.0, the first release with DRAExtendedResource
# (alpha).
DRA_EXTENDED_RESOURCE_POD_NOT_EVICTED = KnownBug(
    issue="kubernetes#141290",
    title="a pod using a DRA extended resource is not evicted by a NoExecute device taint",
    first_affected="1.34.0",
    fixes=(Fix("1.38.0-alpha.1", "kubernetes#142289"), Fix("1.37.2", "kubernetes#142492")),
    shown_by="suites/dra/test_dra_extended_resources.py::test_extended_resource_pod_is_evicted_by_a_noexecute_rule",
    component=CONTROLLER_MANAGER,  # the device-taint eviction controller
)

# A pod whose extended resource is served by DRA (its scheduler-written claim maps the container's request in
# pod.status.extendedResourceClaimStatus) under a name the device manager still knows from a device plugin (the
# plugin went away: PluginDisconnected keeps the resource in healthyDevices, now empty, and its endpoint with the
# plugin's options for the 5-minute grace period; node allocatable 0 sends the pod to DRA, kubernetes#133784) never
# starts when that plugin asked for PreStartContainer: allocateContainerResources skips DRA-backed extended resources
# (isDRAExtendedResource, module source v1.35.8, v1.36.4 and v1.37.1), but GetDeviceRunContainerOptions
# (pkg/kubelet/cm/devicemanager/manager.go) does not, calls callPreStartContainerIfNeeded for it and fails the
# container's start with "no devices found allocated in local cache". PR #141426 ("device-plugin: skip DRA resources
# in GetDeviceRunContainerOptions": "cached kubelet allocation state can incorrectly trigger legacy device-plugin
# handling, preventing the container from starting"; no issue filed): CHANGELOG-1.38 v1.38.0-alpha.1 (read in the
# v1.38.0-beta.0 zip), the skip in module source v1.38.0-beta.0; not in v1.37.1 or v1.37.2 (identical
# pkg/kubelet), and no release note of 1.35 (to v1.35.10), 1.36 (to v1.36.6) or 1.37 (to v1.37.2) names it; no
# cherry-pick found in the issue tracker. First affected: 1.35.0, where the kubelet first admits such pods
# (isDRAExtendedResource in allocateContainerResources: module source v1.35.8, not v1.34.12, where the pod fails
# at admission instead); DRAExtendedResource is alpha and off in 1.35, beta and on from 1.36.
DRA_EXTENDED_RESOURCE_TAKEN_FOR_DEVICE_PLUGIN_RESOURCE = KnownBug(
    issue="kubernetes#141426",
    title="a container whose DRA extended resource has the name of a departed device plugin's resource never starts",
    first_affected="1.35.0",
    fixes=(Fix("1.38.0-alpha.1", "kubernetes#141426"),),
    shown_by=(
        "suites/dra/test_dra_extended_resources.py::"
        "test_extended_resource_named_like_a_departed_device_plugins_resource_starts_its_pod"
    ),
)

# A dra_health_state that decodes to a nil map (`null`, or a driver's `{"Devices": null}`) loads without an error:
# json.Unmarshal of null into the cache's *DevicesHealthMap leaves a nil map (pkg/kubelet/cm/dra/healthinfo.go
# loadFromCheckpoint, module source v1.34.12, v1.36.5 and v1.37.2), and the next health update of a driver assigns
# into it: "assignment to entry in nil map" in healthInfoCache.updateHealthInfo, a kubelet panic, again at every
# start while the file stays. PR #140904 (no issue filed): CHANGELOG-1.38 v1.38.0-alpha.1 "Kubelet: fixed a panic in
# the DRA device-health goroutine when the on-disk health checkpoint file decoded to a nil map" (read in the
# v1.38.0-beta.0 zip), the nil-map guard in module source v1.38.0-beta.0. First affected: 1.34.0, the first minor
# whose kubelet has the health checkpoint (healthinfo.go is in module source v1.34.12, not v1.33.13).
NULL_HEALTH_CHECKPOINT_PANICS = KnownBug(
    issue="kubernetes#140904",
    title="a DRA health checkpoint that decodes to a nil map (`null`) panics the kubelet at the next health update",
    first_affected="1.34.0",
    fixes=(Fix("1.38.0-alpha.1", "kubernetes#140904"),),
    shown_by=(
        "suites/dra/test_dra_health_checkpoint_null.py::test_null_health_checkpoint_survives_the_next_health_update"
    ),
)

# prepareResources appended each driver's NodePrepareResources answer to the claim's DriverState; when another
# driver of the same pod then failed, the claim was left unprepared with the first driver's devices, and the
# retry appended them again: the claim's devices (checkpoint, podresources) and the CDI device IDs handed to
# the runtime held them twice. Fix PR #140274 (resetDevices before applying an answer; no issue filed):
# CHANGELOG-1.37 v1.37.0-rc.0 (its first heading), in module source v1.37.0 and v1.37.1
# (pkg/kubelet/cm/dra/claiminfo.go). Cherry-picks, each read in the v1.38.0-beta.0 zip: #140955 in CHANGELOG-1.36
# v1.36.4 (resetDevices in module source v1.36.4); #140954 in CHANGELOG-1.35 v1.35.10 (module source v1.35.9+
# answers 403 here); #140953 in CHANGELOG-1.34 v1.34.12 (resetDevices in module source v1.34.12, not v1.34.11).
# First affected not pinned down: the append (ClaimInfo.addDevice) is in module source v1.33.13 and v1.34.10;
# set to the first release the DRA suites run on. Reported as #140471 (the kubelet-restart variant, closed as
# fixed by it) and #141335 (open, 2026-08-12: podresources' ListPodResources grows by the other driver's devices
# at every retry, past gRPC's 4 MiB; its release not stated): the test's block checks the checkpoint and
# podresources list each device once after one retry.
PARTIAL_PREPARE_DUPLICATES_DEVICES = KnownBug(
    issue="kubernetes#140274",
    title="a Prepare that failed for one driver of a pod is retried with the other driver's devices twice",
    first_affected=f"1.{FIRST_DRA_MINOR}.0",
    fixes=(
        Fix("1.37.0-rc.0", "kubernetes#140274"),
        Fix("1.36.4", "kubernetes#140955"),
        Fix("1.35.10", "kubernetes#140954"),
        Fix("1.34.12", "kubernetes#140953"),
    ),
    shown_by=(
        "suites/dra/test_dra_multi_claim.py::"
        "test_prepare_failed_for_one_of_two_drivers_is_retried_without_duplicate_devices"
    ),
)

# prepareResources walked the pod's claims in one locked loop (from 1.34.0, when the cache update moved after
# the driver lookups) and `return`ed from it at the first claim already prepared, so the pod's later claims
# were neither added to the claim cache nor prepared: a pod naming a claim another pod had prepared, then a
# new one, failed in GetResources ("unable to get claim info for ResourceClaim ...") and never ran (#135901).
# Read in module source pkg/kubelet/cm/dra/manager.go: `return nil` in v1.34.0, v1.34.3 and v1.35.0, `continue`
# in v1.34.10, v1.35.8, v1.36.4 and v1.37.1; v1.33.13 returns from a per-claim closure (no bug). Fix PR #135919:
# CHANGELOG-1.36 v1.36.0-alpha.1, its first heading (module source v1.36.5). Cherry-picks: #136463 in
# CHANGELOG-1.35 v1.35.1, #136480 in CHANGELOG-1.34 v1.34.4 (module sources v1.35.8 and v1.34.12).
ALREADY_PREPARED_CLAIM_SKIPS_THE_REST = KnownBug(
    issue="kubernetes#135901",
    title="a pod's claims after one that is already prepared are never prepared and the pod never starts",
    first_affected="1.34.0",
    fixes=(
        Fix("1.36.0-alpha.1", "kubernetes#135919"),
        Fix("1.35.1", "kubernetes#136463"),
        Fix("1.34.4", "kubernetes#136480"),
    ),
    shown_by=(
        "suites/dra/test_dra_multi_claim.py::test_pod_with_a_claim_another_pod_prepared_and_a_new_claim_gets_both"
    ),
)


# A DeviceTaintRule without spec.deviceSelector matches no device (k8s.io/api resource/v1 types.go
# DeviceTaintRuleSpec: "Without a selector, no devices are matched"), but the scheduler's view of the slices
# (k8s.io/dynamic-resource-allocation resourceslice/tracker/tracker.go: driverPoolDeviceIndexPatchKey dereferenced a
# nil selector to the empty one, applyPatches skipped all checks for it) put its taint on every device in the
# cluster: a NoSchedule or NoExecute rule made every DRA device unallocatable (#141620). The eviction controller's
# own match (ruleMatchesDevice) already treated nil as no match, so only scheduling shows it. Fix PR #141648:
# CHANGELOG-1.38 v1.38.0-alpha.1 (read in the v1.38.0-beta.0 zip); cherry-picked to 1.37 as #141998:
# CHANGELOG-1.37 v1.37.1 (read in module source v1.37.2);
# the tracker change is in k8s.io/dynamic-resource-allocation v0.37.1, not v0.37.0. Not fixed in v0.36.4, v0.36.5
# (zip fetched without a checksum entry), v0.34.10 or v0.33.13 (same ptr.Deref since the tracker came with
# DeviceTaintRules, PR #130447, 1.33.0), and no cherry-pick to 1.36 or older was found.
NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE = KnownBug(
    issue="kubernetes#141620",
    title="a DeviceTaintRule without a deviceSelector taints every device for the scheduler",
    first_affected=f"1.{FIRST_DEVICE_TAINTS_MINOR}.0",
    fixes=(
        Fix("1.38.0-alpha.1", "kubernetes#141648"),
        Fix("1.37.1", "kubernetes#141998 (cherry-pick of kubernetes#141648)"),
    ),
    shown_by="suites/taints/test_taint_rule_selector.py::test_rule_without_a_device_selector_taints_no_device",
    component=SCHEDULER,  # the DRA scheduler plugin's patched slices (resourceslice/tracker)
)


# unprepareResources tore a claim down when the deleted pod was its only other user... or not a user at all: it
# checked `len(claimInfo.PodUIDs) > 1` without asking whether the pod being unprepared was one of them, so a pod
# whose prepare never took a reference (it failed in the validation pass, e.g. on a claim that does not exist)
# unprepared, when it was deleted, a claim another running pod still used. Fix PR #140212 ("Fixed a bug in
# kubelet DRA where deleting a Pod could unprepare resources still in use by another Pod", CHANGELOG-1.37 v1.37.0,
# first under v1.37.0-alpha.3;
# no issue filed): `if !claimInfo.hasPodReference(podUID)` in unprepareResources, module source v1.37.0 and
# v1.37.1 pkg/kubelet/cm/dra/manager.go; absent from v1.31.0, v1.33.13, v1.34.3, v1.34.10, v1.34.12, v1.35.0,
# v1.35.8, v1.36.4 and v1.36.5, and no cherry-pick in CHANGELOG-1.34 (to v1.34.11), CHANGELOG-1.35 (to v1.35.7)
# or CHANGELOG-1.36 (to v1.36.5). First affected: the same check is in v1.31.0; set to the first release the DRA
# suites run on.
UNREFERENCED_POD_UNPREPARES_SHARED_CLAIM = KnownBug(
    issue="kubernetes#140212",
    title="deleting a pod the kubelet never prepared a shared claim for unprepares the claim under its running user",
    first_affected=f"1.{FIRST_DRA_MINOR}.0",
    fixes=(Fix("1.37.0-alpha.3", "kubernetes#140212"),),
    shown_by="suites/dra/test_dra_shared_claim_teardown.py::test_deleting_a_pod_that_never_got_the_claim_keeps_it_prepared",
)

# The kubelet opened a NodeWatchResources health stream to every registered DRA driver, whether or not it
# advertised the optional DRAResourceHealth service, and retried it every 5 s when the driver answered
# UNIMPLEMENTED (error-level log lines forever): #141855 ("[1.36] Kubelet retries DRA health streams for plugins
# that do not advertise health support", open for the 1.36 branch; first reported as #140353). Read in module
# source pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go add(): the stream starts whenever ResourceHealthStatus
# is on, in v1.34.10, v1.36.4 and v1.36.5 (wait.UntilWithContext, 5*time.Second); v1.37.0 and v1.37.1 start it
# only when the plugin advertised a health service (`p.chosenHealthService != ""`) and stop on UNIMPLEMENTED.
# Fix PR #139477 (CHANGELOG-1.37 v1.37.0-rc.0, its first heading: "The kubelet only opens the device health
# stream for plugins that advertise the service"); the 1.36 cherry-pick #141858 was still open, and v1.36.5 does not
# have it (no release note of 1.36 to v1.36.6 names it). First
# affected: 1.36.0, where ResourceHealthStatus became beta and on by default (module source v1.36.4
# pkg/features/kube_features.go); 1.34-1.35 do the same with the alpha gate turned on, which the suites do not do
# (FIRST_RESOURCE_HEALTH_STATUS_MINOR).
HEALTH_STREAM_TO_DRIVER_WITHOUT_HEALTH_SERVICE = KnownBug(
    issue="kubernetes#141855",
    title="the kubelet calls NodeWatchResources every 5 s on a DRA driver that never advertised the health service",
    first_affected=f"1.{FIRST_RESOURCE_HEALTH_STATUS_MINOR}.0",
    fixes=(Fix("1.37.0-rc.0", "kubernetes#139477"),),
    shown_by="suites/dra/test_dra_health.py::test_no_health_stream_to_a_driver_without_the_health_service",
)

# During a seamless driver update (two registered instances of one driver, KEP-4815) the kubelet opens a health
# stream to each instance, and both feed one per-driver health cache: when the older instance's stream ends, the
# handler's deferred clearDriver deletes the whole driver's health, including what the newer instance reported, so
# its devices read Unknown until that instance reports them again (#140818, open, triage/accepted: "an old
# endpoint being deregistered can clear health information that was already reported by the new endpoint"). Read
# in module source pkg/kubelet/cm/dra/manager.go HandleWatchResourcesStream (`defer ... clearDriver(logger,
# pluginName)`, the driver name) and healthinfo.go clearDriver (`delete(*cache.HealthInfo, driverName)`) in
# v1.36.5, v1.37.2 and v1.38.0-beta.0. Fix PR #140842 ("track authoritative device health stream") is open; no
# release note of 1.36-1.38 names either. First affected: 1.36.0, the first release whose kubelet watches health
# by default (FIRST_RESOURCE_HEALTH_STATUS_MINOR); 1.34-1.35 do the same with the alpha gate turned on.
HEALTH_CLEARED_BY_OLDER_INSTANCE = KnownBug(
    issue="kubernetes#140818",
    title="the older instance's health stream ending clears the device health the newer instance of the driver "
    "reported",
    first_affected=f"1.{FIRST_RESOURCE_HEALTH_STATUS_MINOR}.0",
    shown_by="suites/dra/test_dra_instances_and_health_end.py::"
    "test_the_older_instances_stream_end_keeps_the_health_the_newer_one_reported",
)

# The scheduler's allocator copied a DeviceClass's config into the claim's allocation with `Requests: nil` ("All of
# them...", structured/allocator.go), so a class config applied, for the driver, to every request of the claim,
# including those of other classes, and two requests of one class got the config twice (#134789). Fix PR #134793
# (mainline, CHANGELOG-1.35 v1.35.0-alpha.3, its first heading): one entry per class naming the requests of that
# class. Cherry-picks: #135098
# in CHANGELOG-1.34 v1.34.2, #135105 in CHANGELOG-1.33 v1.33.6, #135109 in CHANGELOG-1.32 v1.32.10 (module source
# v1.32.13). Read in k8s.io/dynamic-resource-allocation structured: `Requests: nil` in v0.31.0 and v0.34.1,
# `[]string{requestData.requestName()}` in v0.33.13, v0.34.3, v0.34.10 and v0.37.1. First affected: the same code
# is in v0.31.0; set to the first release the DRA suites run on.
CLASS_CONFIG_NAMES_NO_REQUESTS = KnownBug(
    issue="kubernetes#134789",
    title="a DeviceClass config in a claim's allocation names no requests, so it applies to every request",
    first_affected=f"1.{FIRST_DRA_MINOR}.0",
    fixes=(
        Fix("1.35.0-alpha.3", "kubernetes#134793"),
        Fix("1.34.2", "kubernetes#135098"),
        Fix("1.33.6", "kubernetes#135105"),
        Fix("1.32.10", "kubernetes#135109"),
    ),
    shown_by="suites/dra/test_dra_class_config.py::test_class_config_names_only_the_requests_of_its_class",
    component=SCHEDULER,  # the DRA scheduler plugin's allocator (k8s.io/dynamic-resource-allocation/structured)
)

# A pod scheduled with a claim of a driver that is not registered on the node (a mistake: no driver running there)
# could not be deleted: prepareResources added the pod to the claim's cache entry before it looked the driver up,
# so the failed prepare left a reference, and unprepareResources then failed on the missing driver ("get gRPC client
# for DRA driver ...") at every retry: the pod stayed Terminating until the driver came. Fix PR #131968 ("DRA
# kubelet: Simplified recovery from mistakes like scheduling a Pod onto a node where the required driver was not
# running, as the kubelet no longer unnecessarily blocked Pod deletion", CHANGELOG-1.34 v1.34.0, first under
# v1.34.0-alpha.1; no issue named):
# the driver lookup moved into the validation pass, before any reference is taken. Read in module source
# pkg/kubelet/cm/dra/manager.go: v1.33.13 calls addPodReference before NewDRAPluginClient; v1.34.0, v1.34.10 and
# v1.37.1 call GetPlugin first. No cherry-pick in CHANGELOG-1.33 (to v1.33.12). First affected: set to the first
# release the DRA suites run on.
MISSING_DRIVER_BLOCKS_POD_DELETION = KnownBug(
    issue="kubernetes#131968",
    title="a pod whose claim's driver is not registered on the node cannot be deleted until the driver comes",
    first_affected=f"1.{FIRST_DRA_MINOR}.0",
    fixes=(Fix("1.34.0-alpha.1", "kubernetes#131968"),),
    shown_by="suites/dra/test_dra_missing_driver.py::test_pod_of_a_driver_missing_on_the_node_can_be_deleted",
)
