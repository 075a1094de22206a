"""What the device plugin manager does, by kubelet release; each entry names the upstream change and where
its release numbers were read.

"Module source vX.Y.Z" below means pkg/kubelet/cm/devicemanager/ (or the named file) in the k8s.io/kubernetes
module zip of that release from the Go module proxy; CHANGELOG-1.NN.md is the file of that name in the same
zips (the release notes of every patch release of the minor). A fix names the first tag that carries it: for a
mainline change the pre-release whose notes first name its PR (CHANGELOG-1.NN "v1.NN.0-beta.0" read in the
v1.38.0-beta.0 zip), as `device-conformance bugs verify` checks.
"""

from __future__ import annotations

from device_conformance.core import timeouts
from device_conformance.expectations.behaviour import Behaviour, Fix, KnownBug, Since

# Outcomes of a restart on a checkpoint the kubelet cannot use (names used by the checkpoint tests).
REJECTED_UNTIL_REGISTERED = "rejected-until-registered"  # the resource is known: pods fail admission
ADMITTED_WITHOUT_DEVICES = "admitted-without-devices"  # state lost: node status still offers the devices

# A pre-1.20 ("v1", flat DeviceIDs) kubelet_internal_checkpoint, plugin not registered, kubelet restarted.
# - 1.20.0: the checkpoint format changed and the reader only knows the new one; a v1 file is a logged read
#   error and empty state (#102880).
# - The v1 fallback reader (PR #102882, checkpoint/checkpointv1.go) is in module source v1.23.0 and was
#   cherry-picked to 1.22 (#106253), 1.21 (#106254) and 1.20 (#106295), all merged 2021-12-02 (#102880
#   thread). checkpointv1.go is absent from v1.22.4 and v1.21.7, present in v1.22.5 and v1.21.8; it is
#   absent from v1.20.13 and present in v1.20.15. v1.20.14 itself could not be read (the proxy answers 403
#   for it) and the release notes omit the change (release-note text only on the master PR), so 1.20.14 is
#   inferred: it shipped with 1.21.8/1.22.5 and carries 1.20 cherry-picks merged after 2021-12-02 (#106927
#   in CHANGELOG-1.20 v1.20.14). If that were wrong, only 1.20.14's verdict would be.
# - PR #123398 removed the v1 reader: CHANGELOG-1.31 v1.31.0 ("no longer able to recover from device
#   manager state file older than 1.20"); checkpointv1.go is in v1.30.14, not in v1.31.0. Not backported.
V1_CHECKPOINT_ON_RESTART = Behaviour(
    "pre-1.20 checkpoint read at kubelet start",
    (
        Since("1.20.0", ADMITTED_WITHOUT_DEVICES, "kubernetes#102880"),
        Since(
            "1.23.0",
            REJECTED_UNTIL_REGISTERED,
            "kubernetes#102882",
            backports=(
                Fix("1.22.5", "kubernetes#106253"),
                Fix("1.21.8", "kubernetes#106254"),
                Fix("1.20.14", "kubernetes#106295"),
            ),
        ),
        Since("1.31.0", ADMITTED_WITHOUT_DEVICES, "kubernetes#123398"),
    ),
)

# A kubelet_internal_checkpoint whose checksum does not match: ManagerImpl.Start logs "Continue after
# failing to read checkpoint file" and starts with empty state. Same in module source v1.20.15 (warning),
# v1.30.14 and v1.31.0 (info), v1.37.1 (error); the v1 fallback of 1.20.14-1.30 fails the checksum too.
CORRUPT_CHECKPOINT_ON_RESTART = Behaviour(
    "checkpoint with a wrong checksum read at kubelet start",
    (
        Since(
            "1.20.0", ADMITTED_WITHOUT_DEVICES, "pkg/kubelet/cm/devicemanager/manager.go: any read error is only logged"
        ),
    ),
)

# The kubelet's message for both of the above.
CHECKPOINT_READ_WARNING = "Continue after failing to read checkpoint file"

# Two plugin instances serving one resource on different sockets (rollout): the old one going away removed
# the new one's endpoint and allocatable dropped to 0 (#121994, #127803). PR #135437 keys endpoints by
# socket (ManagerImpl.endpointStore): present in module source v1.37.0 and v1.37.1; v1.36.4 and v1.36.5
# (read from an unverified zip: the checksum database has no v1.36.5) still key them by resource name.
# CHANGELOG-1.37 has no entry for it (to v1.37.2, read in the v1.38.0-beta.0 zip) and no cherry-pick was found,
# so 1.37.0 is the first tag known from module source (pre-releases not read). First affected: 1.10.0 as recorded
# before (per-resource-name endpoints since the v1beta1 API); releases before 1.20 were not read.
PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE = KnownBug(
    issue="kubernetes#127803",
    title="a device plugin rollout with two instances zeroes allocatable",
    first_affected="1.10.0",
    fixes=(
        Fix(
            "1.37.0",
            "kubernetes#135437",
            source="module source v1.37.0 pkg/kubelet/cm/devicemanager/manager.go (endpointStore keyed by socket; "
            "v1.36.4 and v1.36.5 key endpoints by resource name); no release note",
        ),
    ),
    shown_by="suites/device_plugin/test_plugin_restart.py::test_rollout_of_a_second_instance_keeps_the_resource_available",
)

# A Succeeded pod kept by a finalizer was re-admitted (and failed) after a kubelet restart (#126341).
# Fix #126343: CHANGELOG-1.32 v1.32.0-alpha.1 (its first heading naming it); cherry-picks: CHANGELOG-1.31
# v1.31.1 (#127207), CHANGELOG-1.30 v1.30.5 (#127208), CHANGELOG-1.29 v1.29.9 (#127209), CHANGELOG-1.28 v1.28.14
# (#127210).
# First affected: module source v1.21.14 HandlePodAdditions skips admission for terminated pods
# (podIsTerminated); from v1.22 (pod worker rework) it checks only IsPodTerminationRequested, so 1.22.0.
# (The data said 1.26 before, without a source.) Whether the device plugin test shows it on 1.22-1.27
# also depends on #116376 (rejecting pods whose plugin is not registered: 1.28.0, cherry-picked to
# 1.26.5 and 1.25.10) and was not checked; from 1.28 it is unambiguous.
SUCCEEDED_POD_READMITTED = KnownBug(
    issue="kubernetes#126341",
    title="terminated pods are re-admitted on kubelet restart",
    first_affected="1.22.0",
    fixes=(
        Fix("1.32.0-alpha.1", "kubernetes#126343"),
        Fix("1.31.1", "kubernetes#127207"),
        Fix("1.30.5", "kubernetes#127208"),
        Fix("1.29.9", "kubernetes#127209"),
        Fix("1.28.14", "kubernetes#127210"),
    ),
    shown_by=(
        "suites/device_plugin/test_kubelet_restart.py::"
        "test_succeeded_pod_is_not_readmitted_after_restart_without_its_plugin"
    ),
)

# Capacity of a stopped endpoint stays for the grace period; after expiry the resource is removed from
# the manager and reported as 0 (the key itself is never removed from node status: #52510).
ENDPOINT_STOP_GRACE_SECONDS = timeouts.ENDPOINT_STOP_GRACE_PERIOD  # endpointStopGracePeriod (endpoint.go)

# When a stopped endpoint's grace period expires, GetCapacity deleted the endpoint in its healthy-devices
# loop, so its unhealthy-devices loop then logged "Unexpected: unhealthyDevices and endpoints became out of
# sync" (#133702). Both sets are still removed in the same call, so node status and podresources are the
# same on both sides of the fix: only the log line shows it. Fix PR #133724 (release note NONE, so not in
# any CHANGELOG): module source v1.35.0, v1.36.4 and v1.37.1 delete after both loops; v1.33.13, v1.34.10 and
# v1.34.12 do not (no cherry-pick). The two loops are already in v1.20.15, the oldest source read (the
# message says "are out of sync" there, in v1.28.15 and v1.31.0, "became out of sync" in v1.33.13 and
# later), so 1.20.0 is the earliest release this entry vouches for. Every plugin's resource has an
# unhealthyDevices entry (empty or not: genericDeviceUpdateCallback sets both), so every expiry logs it.
EXPIRED_ENDPOINT_OUT_OF_SYNC_LOG = KnownBug(
    issue="kubernetes#133702",
    title="an expired device plugin endpoint logs 'unhealthyDevices and endpoints became out of sync'",
    first_affected="1.20.0",
    fixes=(
        Fix(
            "1.35.0",
            "kubernetes#133724",
            source="module source v1.35.0 pkg/kubelet/cm/devicemanager/manager.go GetCapacity (deletes after both "
            "loops; v1.34.12 does not); release note NONE",
        ),
    ),
    shown_by="suites/device_plugin/test_grace_period.py::test_plugin_returning_after_expiry_gets_all_devices_back",
)
# The part of that log line both wordings share (InfoS or ErrorS: logged at the default verbosity).
EXPIRED_ENDPOINT_OUT_OF_SYNC_MESSAGE = "unhealthyDevices and endpoints"

# What the kubelet logs, once per plugin, when a plugin's ListAndWatch stream breaks (its process killed):
# client.Run in pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go logs it with the key resource="<name>"
# at error level (any verbosity) and returns, so a plugin killed once gives exactly one such line. The same
# message in module source v1.28.15 to v1.37.2. A test that reads the kubelet log for a line that must NOT be
# there first finds this one in the same window, so a log read that came back empty (a journal on a node,
# the wrong unit or window) fails instead of passing.
LISTANDWATCH_ENDED_MESSAGE = "ListAndWatch ended unexpectedly for device plugin"

# A kubelet starting without kubelet_internal_checkpoint (a recreated node) should zero the node's
# extended resources until their plugins register (PR #77699, 1.15). ListCheckpoints lists every file in
# the device-plugins directory, kubelet.sock included, so the reset never happens (#126943, open; fix
# proposed in PR #137335, open). ShouldResetExtendedResourceCapacity is `len(checkpoints) == 0` over that
# list in module source v1.20.15, v1.28.15, v1.36.4, v1.36.5, v1.37.1 and v1.37.2.
EXTENDED_RESOURCES_NOT_RESET = KnownBug(
    issue="kubernetes#126943",
    title="extended resources are not zeroed when the device manager checkpoint is missing",
    first_affected="1.15.0",
    shown_by="suites/device_plugin/test_checkpoint.py::test_missing_checkpoint_resets_the_extended_resource",
)

# After a kubelet restart that lost the device manager's state (a checkpoint it cannot read: the pre-1.20
# format on 1.31+, a wrong checksum; or none), a resource whose plugin has not registered again is no
# device plugin resource to the kubelet: allocateContainerResources skips any resource isDevicePluginResource
# does not know (no healthy devices, no allocations), so a pod asking for it is admitted and runs without
# devices while node status still offers them (pkg/kubelet/cm/devicemanager/manager.go, module source
# v1.37.1). Reported as #116125 (node reboot without kubelet_internal_checkpoint: "the pod is running, but
# the gpu device is not mounted"), closed with no fix in any release; #116376 (1.28, the fix of #109595)
# rejects such pods only when the checkpoint names the resource. The skip dates from PR #53547 (1.9,
# cherry-picked to 1.8 as #53605); releases before 1.20 were not read, so 1.20.0 is the earliest this
# entry vouches for. Which restarts lose the state, by release: V1_CHECKPOINT_ON_RESTART,
# CORRUPT_CHECKPOINT_ON_RESTART, EXTENDED_RESOURCES_NOT_RESET.
POD_RUNS_WITHOUT_DEVICES_AFTER_STATE_LOSS = KnownBug(
    issue="kubernetes#116125",
    title="a pod runs without the devices it requested after the kubelet lost its device state",
    first_affected="1.20.0",
    shown_by=(
        "suites/device_plugin/test_checkpoint.py::test_checkpoint_with_wrong_checksum_on_restart and, on releases "
        "that cannot read a pre-1.20 checkpoint, test_forged_pre_1_20_checkpoint_on_restart"
    ),
)

# A Register on a socket the kubelet is still connected to is refused ("device plugin already connected",
# ManagerImpl.PluginConnected), but the handler's cleanup of the refused client, deregisterClient(name,
# socketPath), drops every client of that name and socket: the live connection's client too. When that
# plugin later goes away, runClient finds no client (getClient) and never calls PluginDisconnected: the
# endpoint stays in endpointStore, the devices stay allocatable with no plugin behind them, and every later
# Register on that socket path is refused again. Module source v1.37.1 (plugin/v1beta1/handler.go
# connectClient/runClient, manager.go PluginConnected); it came with the per-socket client list of PR
# #135437 (v1.37.0; its review asked whether duplicate name+socket entries are guarded: "we are under the
# assumption that no socket of the same name is able to open at the same time"). v1.36.4 has no such refusal
# (a second Register on the socket replaces the connection). Same code in module source v1.37.2 and
# v1.38.0-beta.0 (master of 2026-11-06); v1.36.5 has neither the refusal nor the per-socket client list. No
# upstream issue was found; the entry names the PR until one is filed, and docs/findings/
# refused-register-drops-live-client.md is the report to file.
REFUSED_REREGISTRATION_DROPS_LIVE_CLIENT = KnownBug(
    issue="kubernetes#135437",
    title="a refused Register on a connected socket drops the live client: its disconnect is never processed "
    "and the socket stays 'already connected'",
    first_affected="1.37.0",
    shown_by="suites/device_plugin/test_registration.py::test_late_disconnect_of_a_reused_socket_frees_the_socket",
    finding="refused-register-drops-live-client",
)

# A Register on a socket path the kubelet is still connected to (another process now serving that path).
# Module source v1.31.0, v1.33.13, v1.34.10, v1.35.8 and v1.36.4 (plugin/v1beta1/handler.go connectClient,
# registerClient; client.go Connect; manager.go PluginConnected): the new client replaces s.clients[resourceName]
# and the Register succeeds (GetDevicePluginOptions, then the ListAndWatch stream). From v1.37.0 (PR #135437, per-socket
# clients; manager.go PluginConnected in module source v1.37.0 and v1.37.1) it is refused with "device plugin
# already connected: <socket>". Module source v1.28.15, v1.29.15 and v1.30.14 have the same connectClient and
# registerClient as v1.31.0 (handler.go differs only in RegisterPlugin's new pluginClientTimeout parameter, 1.30,
# and client.go in a mutex around Connect's client, 1.29), and CHANGELOG-1.28, -1.29 and -1.30 list no device
# plugin change in any patch release, so the entry starts at 1.28.0. Releases before 1.28 were not read.
REGISTRATION_REPLACES_THE_CONNECTION = "replaces-the-connection"
REGISTRATION_REFUSED_ALREADY_CONNECTED = "refused-already-connected"
REGISTER_ON_A_CONNECTED_SOCKET = Behaviour(
    "Register on a socket the kubelet is connected to",
    (
        Since("1.28.0", REGISTRATION_REPLACES_THE_CONNECTION, "plugin/v1beta1/handler.go registerClient"),
        Since("1.37.0", REGISTRATION_REFUSED_ALREADY_CONNECTED, "kubernetes#135437"),
    ),
)

# What podresources (List and Get) reports for a pod with a sidecar, a restartable init container (SidecarContainers:
# alpha and off in 1.28, beta and on from 1.29, GA in 1.33). Module source v1.28.15 and v1.29.15
# (pkg/kubelet/apis/podresources/server_v1.go List and Get) build the entry from pod.Spec.Containers alone, so the
# sidecar and the devices it holds are missing. PR #120718 adds the restartable init containers when the gate is on:
# CHANGELOG-1.30 v1.30.0 ("Node podresources API now includes init containers with containerRestartPolicy of
# `Always` when `SidecarContainers` feature is enabled"), in module source v1.30.14, v1.31.4 and (without the gate
# check, GA) v1.33.13 and v1.37.1; CHANGELOG-1.29 lists no cherry-pick. Seen on 2026-11-24: 1.29.15 listed
# {'main': ['dev-1']} for a pod whose sidecar held dev-0; 1.30.14 listed both.
PODRESOURCES_OMITS_SIDECARS = "omits-sidecars"
PODRESOURCES_LISTS_SIDECARS = "lists-sidecars"
PODRESOURCES_SIDECAR_ENTRY = Behaviour(
    "podresources entry of a pod with a sidecar container",
    (
        Since("1.28.0", PODRESOURCES_OMITS_SIDECARS, "podresources/server_v1.go lists pod.Spec.Containers only"),
        Since("1.30.0", PODRESOURCES_LISTS_SIDECARS, "kubernetes#120718"),
    ),
)

# A device's health change makes the device manager push the pod holding it to the sync loop, so that the pod's
# allocatedResourcesStatus shows it at once (KEP-4680, ResourceHealthStatus). podDevices.getPodAndContainerForDevice
# matched the device ID alone across every resource, so with another plugin's device of the same ID allocated to
# another pod, Go map order picked either pod: the owner's status then changed only at its next resync (60-90 s).
# Found as the flaking upstream e2e test of #140268; fix PR #140323 scopes the lookup by resource name:
# CHANGELOG-1.37 v1.37.0-beta.0 (its first tag), the resourceName parameter in module source v1.37.0 and v1.37.1; not
# in v1.36.4, v1.36.5 (zip fetched without a checksum entry), v1.34.12, v1.33.13 or v1.31.0; no cherry-pick found.
# First affected: 1.31.0, where the lookup came with the device-plugin half of KEP-4680 (PR #126243; the gate is
# alpha and off until 1.36, so only clusters that turned it on show it before 1.36).
DEVICE_HEALTH_PUSHED_TO_WRONG_POD = KnownBug(
    issue="kubernetes#140268",
    title="a device health change is pushed to another pod holding a device of the same ID under another resource",
    first_affected="1.31.0",
    fixes=(Fix("1.37.0-beta.0", "kubernetes#140323"),),
    shown_by=(
        "suites/device_plugin/test_health_status.py::"
        "test_health_change_is_pushed_to_its_own_pod_when_other_resources_have_the_same_device_id"
    ),
)

# podresources List answered from every pod the kubelet knows (podsProvider.GetPods()), terminal ones included,
# while the resource managers account only for active pods: a Succeeded or Failed pod stayed listed, with the
# devices the device manager had not yet reassigned (#119423, reported on 1.26.2; also #132020, #131999). Fix PR
# #132028 lists GetActivePods() behind the KubeletPodResourcesListUseActivePods gate (default on; off restores
# the old listing): CHANGELOG-1.34 v1.34.0-beta.0, its first heading ("Change the node-local podresources API
# endpoint to only consider of active pods"; v1.34.0 repeats it); the gate and GetActivePods are in module source
# v1.34.0, v1.34.10, v1.35.8, v1.36.4 and v1.37.1.
# GetPods() is what List uses in module source v1.20.15 (the v1 server's first minor is 1.20, the oldest read),
# v1.31.0, v1.31.4, v1.32.5 and v1.33.13; no cherry-pick (a behaviour change behind a new gate; the 1.33
# cherry-pick of the related #135485, #138025, left the filtering out and was closed at 1.33's end of life).
PODRESOURCES_LISTS_TERMINATED_PODS = KnownBug(
    issue="kubernetes#119423",
    title="podresources List reports pods that have ended (Succeeded or Failed)",
    first_affected="1.20.0",
    fixes=(Fix("1.34.0-beta.0", "kubernetes#132028"),),
    shown_by="suites/device_plugin/test_podresources_lists.py::test_podresources_lists_no_pod_that_has_ended",
)

# After a kubelet restart, a device container found running is not allocated again (#118635, 1.28.0, the fix of
# #118559; cherry-picked to 1.27-1.25). isContainerAlreadyRunning looked the container up with
# containerMap.GetContainerID(pod, name), which returns the first map entry of that pod and name; a container
# that had restarted before the kubelet did has two (the exited one the kubelet keeps and the running one), Go's
# map order picks either, and when it picks the exited one the running pod is re-admitted: with its plugin not
# registered yet it fails with UnexpectedAdmissionError and is killed. Reported with logs in PR #126707 (2024,
# closed unmerged; no issue was filed), named here as the bug's report. Fix PR #135485 ("Fix device plugin
# admission failure after container restart", its "Fix 1") checks every entry:
# CHANGELOG-1.36 v1.36.0-alpha.1 (its first heading); cherry-picks CHANGELOG-1.35 v1.35.4 (#138042) and
# CHANGELOG-1.34 v1.34.7 (#138027);
# the 1.33 cherry-pick #138025 was closed unmerged (1.33 end of life). The loop over entries is in module source
# v1.34.7, v1.34.10, v1.34.12, v1.35.4, v1.35.8, v1.36.4, v1.37.0 and v1.37.1; GetContainerID in v1.31.0,
# v1.31.4, v1.32.5, v1.33.13, v1.34.0, v1.34.3, v1.35.0 and v1.35.3 (the proxy refuses v1.34.6). First affected:
# 1.28.0 (where #118635 landed on the mainline; the 1.25-1.27 patch releases that got its cherry-picks have the
# bug too, outside this table's minors).
RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART = KnownBug(
    issue="kubernetes#126707",
    title="a running device pod whose container restarted once is re-admitted and failed on a kubelet restart "
    "while its plugin is away",
    first_affected="1.28.0",
    fixes=(
        Fix("1.36.0-alpha.1", "kubernetes#135485"),
        Fix("1.35.4", "kubernetes#138042"),
        Fix("1.34.7", "kubernetes#138027"),
    ),
    shown_by=(
        "suites/device_plugin/test_kubelet_restart.py::"
        "test_pod_with_restarted_containers_survives_kubelet_restart_while_its_plugin_is_away"
    ),
)

# podresources Get (KubeletPodResourcesGet: alpha from 1.27, beta and on by default from 1.34) looked the pod up in
# the pod manager (kubeletPodsProvider.GetPodByName), so it kept answering for a pod that had ended, with the
# devices the device manager had not yet reassigned, after List stopped listing such pods (#132028, 1.34.0).
# GetPodByName skips inactive pods (Kubelet.isPodInactive, the filter of GetActivePods) from the same PR as
# RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART, #135485 ("Fix 2 - Filter terminal pods from podresources" in
# its description; no issue was filed). That attribution is inferred: the upstream history could not be read
# here, but the filter arrives in each minor together with #135485 or its cherry-pick. Module source v1.36.4,
# v1.37.0 and v1.37.1 have it, and through the cherry-picks v1.34.7, v1.34.10, v1.35.4 and v1.35.8
# (CHANGELOG-1.34 v1.34.7 #138027 and CHANGELOG-1.35 v1.35.4 #138042 are the only podresources or device manager
# entries there); v1.33.13, v1.34.0, v1.34.3, v1.35.0 and v1.35.3 do not. The 1.33 cherry-pick (#138025) was
# closed unmerged. First affected: 1.27.0, where Get came (alpha, off by default: before 1.34 only clusters that
# turned the gate on have it).
PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD = KnownBug(
    issue="kubernetes#135485",
    title="podresources Get answers for a pod that has ended, with the devices it held",
    first_affected="1.27.0",
    fixes=(
        Fix("1.36.0-alpha.1", "kubernetes#135485"),
        Fix("1.35.4", "kubernetes#138042"),
        Fix("1.34.7", "kubernetes#138027"),
    ),
    shown_by="suites/device_plugin/test_podresources_lists.py::test_podresources_get_answers_no_pod_that_has_ended",
)

# An in-place resize (InPlacePodVerticalScaling: alpha from 1.27, beta and on by default from 1.33) is admitted by
# running the pod admit handlers again (v1.33.13 Kubelet.canResizePod -> canAdmitPod over kl.admitHandlers; from
# 1.34 the allocation manager's canResizePod/canAdmitPod, with Operation "resize" from 1.36), the resource managers'
# handler among them, so the device manager's Allocate ran for a pod it had already given devices. Its
# devicesToAllocate then refused the pod when an allocated device had turned unhealthy ("previously allocated
# devices are no longer healthy; cannot allocate unhealthy devices") or the plugin was away, and a CPU resize stayed
# Deferred with UnexpectedAdmissionError's message. PR #140224 (no issue; release note none, so in no CHANGELOG)
# makes ManagerImpl.Allocate return at once for any operation but "add": in module source v1.37.0 and v1.37.1, not
# in v1.36.4 or v1.36.5; no cherry-pick found. First affected: 1.33.0 is the earliest this entry vouches for (the
# sources read: v1.33.13, v1.34.10, v1.35.8, v1.36.4); before 1.33 only clusters that turned the gate on resize.
RESIZE_RUNS_DEVICE_ALLOCATION = KnownBug(
    issue="kubernetes#140224",
    title="an in-place CPU resize of a pod whose device turned unhealthy is deferred: the resize runs device "
    "allocation again",
    first_affected="1.33.0",
    fixes=(
        Fix(
            "1.37.0",
            "kubernetes#140224",
            source="module source v1.37.0 pkg/kubelet/cm/devicemanager/manager.go Allocate (returns at once for an "
            "operation other than add; v1.36.5 does not); release note none",
        ),
    ),
    shown_by="suites/device_plugin/test_resize.py::test_cpu_resize_of_a_pod_whose_device_turned_unhealthy_is_applied",
)

# After a kubelet restart, a pod whose init container held a device and completed, and whose app container runs,
# is re-admitted and failed while its plugin is away (#138446, open; "Allocate failed due to no healthy devices
# present; cannot allocate unhealthy devices"). devicesToAllocate (pkg/kubelet/cm/devicemanager/manager.go)
# returns early while sources are not ready only for a container isContainerAlreadyRunning finds running; a
# completed init container is in the container map but not in the running set, so it reaches the registration
# and health checks, which sit before `needed == 0` on purpose (#109595, fixed by #116376), although it needs no
# new device. The early return and the checks' order are the same in module source v1.28.15, v1.34.10, v1.37.1
# and v1.38.0-beta.0; the #126707 fix (#135485) changed only which map entries count as running. First affected:
# 1.28.0, where #116376 and #118635 met on the mainline (before it any running container was re-admitted:
# #118559). No fix released.
# The report's second trigger takes the same path for any running container: the running set comes from one CRI
# snapshot at the container manager's start (pkg/kubelet/cm/helpers.go buildContainerMapAndRunningSetFromRuntime,
# which drops ListPodSandbox and ListContainers errors), so a container a failed or incomplete snapshot misses is
# re-admitted too (suites/device_plugin/test_cri_snapshot_at_kubelet_start.py, through the CRI proxy).
COMPLETED_INIT_CONTAINER_READMITTED_ON_KUBELET_RESTART = KnownBug(
    issue="kubernetes#138446",
    title="a running device pod whose init container held a device and completed, or whose container the kubelet's "
    "CRI snapshot at start missed, is re-admitted and failed on a kubelet restart while its plugin is away",
    first_affected="1.28.0",
    shown_by=(
        "suites/device_plugin/test_kubelet_restart.py::"
        "test_pod_with_a_completed_init_device_container_survives_kubelet_restart_while_its_plugin_is_away"
    ),
)

# A device the plugin drops from its ListAndWatch list while the kubelet's Allocate for it is in flight: after the
# answer, allocateContainerResources reads `m.allDevices[resource][dev].Topology` for each allocated device
# without checking it is still listed, so the kubelet panics (nil pointer dereference) and, the pod still pending,
# panics again at every start until the pod is gone (pkg/kubelet/cm/devicemanager/manager.go; the same lines in
# module source v1.31.4 to v1.38.0-beta.0). Seen upstream only in a node e2e failure (kubernetes#95041, closed when
# the test was fixed); no report of the bug, no fix. The lines are old, but they panic only since #133028 ("Convert
# k8s.io/kubelet/pkg/apis/deviceplugin from gogo to protoc", release note in CHANGELOG-1.34 under v1.34.0-rc.0)
# made DeviceInstances a map of *pluginapi.Device (pod_devices.go; v1.34.0 has it). Before, it held
# pluginapi.Device values (module source v1.31.4, v1.32.9, v1.33.13): a device no longer listed read as a zero
# Device without topology and was counted under nodeWithoutTopology, no panic (the matrix saw the check pass on
# 1.31.4). First affected: 1.34.0-rc.0.
DEVICE_REMOVED_DURING_ALLOCATE_PANICS = KnownBug(
    issue="finding:device-removed-during-allocate-panics",
    title="the kubelet panics when a device leaves the plugin's list while its Allocate is in flight",
    first_affected="1.34.0-rc.0",
    shown_by=(
        "suites/device_plugin/test_device_removed_during_allocate.py::"
        "test_device_removed_while_its_allocate_is_in_flight_does_not_crash_the_kubelet"
    ),
)

# allocateContainerResources (pkg/kubelet/cm/devicemanager/manager.go) marks the devices devicesToAllocate picked in
# allocatedDevices and calls the plugin's Allocate outside the manager's lock; the pod's devices reach podDevices
# only with the answer. UpdateAllocatedDevices, called before every allocation and by podresources List
# (apis/podresources/server_v1.go), rebuilt allocatedDevices from podDevices alone whenever some pod had become
# inactive, so an allocation in flight at that moment lost its devices, and nothing marked them again after the
# answer: the next pod could be given the same device. PR #137534 ("kubelet/devicemanager: preserve in-flight
# reservations across allocatedDevices rebuilds", no issue filed; its unit test: "pod1=[dev0] pod2=[dev0]"): the
# release note "Fixed a bug where Kubelet device manager may assign the same device ID to multiple pods
# simultaneously" is in CHANGELOG-1.38 v1.38.0-alpha.1 (read in the v1.38.0-beta.0 zip), and the reservations
# (podDevices.reserve, regenerateAllocatedDevicesLocked) are in module source v1.38.0-beta.0, not in v1.37.1 or
# v1.37.2 (identical pkg/kubelet). No release note of 1.34 (to v1.34.13), 1.35 (to v1.35.10), 1.36 (to v1.36.6) or
# 1.37 (to v1.37.2) names it, and no cherry-pick was found in the issue tracker. First affected: 1.28.0 is the
# earliest this entry vouches for (the rebuild in UpdateAllocatedDevices, the Allocate call outside the lock and
# List calling UpdateAllocatedDevices are in module source v1.28.15, v1.34.12, v1.36.4 and v1.37.1).
INFLIGHT_ALLOCATION_DROPPED_ON_REBUILD = KnownBug(
    issue="kubernetes#137534",
    title="a device whose Allocate is in flight when an ended pod's devices are freed is given to the next pod too",
    first_affected="1.28.0",
    fixes=(Fix("1.38.0-alpha.1", "kubernetes#137534"),),
    shown_by=(
        "suites/device_plugin/test_inflight_allocation.py::test_device_of_an_allocation_in_flight_is_not_given_to_the_"
        "next_pod"
    ),
)
