"""What the device plugin manager does, by kubelet version; each entry names the upstream change."""

from __future__ import annotations

from device_conformance.expectations.behaviour import Behaviour, KnownBug, Since
from device_conformance.expectations.versions import KubeVersion

# Outcomes of a restart on a checkpoint the kubelet cannot use (names used by the checkpoint tests).
REJECTED_UNTIL_REGISTERED = "rejected-until-registered"  # the resource is known: pods fail admission
ADMITTED_WITHOUT_DEVICES = "admitted-without-devices"  # state lost: node status still offers the devices

# A pre-1.20 ("v1", flat DeviceIDs) kubelet_internal_checkpoint, plugin not registered, kubelet restarted.
V1_CHECKPOINT_ON_RESTART = Behaviour(
    "pre-1.20 checkpoint read at kubelet start",
    (
        # 1.20-1.22.x: v2 reader only; warning, empty state (#102880).
        Since(20, ADMITTED_WITHOUT_DEVICES, "kubernetes#102880"),
        # 1.23 (backported to 1.20-1.22 in Dec 2021): falls back to the v1 reader (PR #102882).
        Since(23, REJECTED_UNTIL_REGISTERED, "kubernetes#102882"),
        # 1.30: v1 support removed; "the kubelet is no longer able to recover from device manager state
        # file older than 1.20" (PR #123398).
        Since(30, ADMITTED_WITHOUT_DEVICES, "kubernetes#123398"),
    ),
)

# A kubelet_internal_checkpoint whose checksum does not match: every version logs "Continue after failing
# to read checkpoint file" and starts with empty state (pkg/kubelet/cm/devicemanager/manager.go).
CORRUPT_CHECKPOINT_ON_RESTART = Behaviour(
    "checkpoint with a wrong checksum read at kubelet start",
    (Since(20, ADMITTED_WITHOUT_DEVICES, "pkg/kubelet/cm/devicemanager/manager.go: any read error is only logged"),),
)

# The kubelet's warning for both of the above.
CHECKPOINT_READ_WARNING = "Continue after failing to read checkpoint file"

# Two plugin instances serving one resource on different sockets (rollout): the old one going away
# removed the new one's endpoint, allocatable dropped to 0 (#121994, #127803; per-socket endpoints in
# PR #135437, first released in 1.36).
PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE = KnownBug(
    issue="kubernetes#127803",
    title="a device plugin rollout with two instances zeroes allocatable",
    since_minor=10,
    fixed_in=KubeVersion(1, 36, 0),
    fix="kubernetes#135437",
)

# A Succeeded pod kept by a finalizer was re-admitted (and failed) after a kubelet restart.
SUCCEEDED_POD_READMITTED = KnownBug(
    issue="kubernetes#126341",
    title="terminated pods are re-admitted on kubelet restart",
    since_minor=26,
    fixed_in=KubeVersion(1, 32, 0),
    fix="kubernetes#126343 (backports #127207 to 1.31, #127208 to 1.30)",
)

# Capacity of a stopped endpoint stays for the grace period; after expiry the resource is removed from
# the manager and reported as 0 (the key itself is never removed from node status: #52510).
ENDPOINT_STOP_GRACE_SECONDS = 5 * 60  # endpointStopGracePeriod, pkg/kubelet/cm/devicemanager/endpoint.go

# A kubelet starting without kubelet_internal_checkpoint (a recreated node) should zero the node's
# extended resources until their plugins register (PR #77699). ListCheckpoints lists every file in
# the device-plugins directory, kubelet.sock included, so the reset never happens (#126943, open;
# fix proposed in PR #137335).
EXTENDED_RESOURCES_NOT_RESET = KnownBug(
    issue="kubernetes#126943",
    title="extended resources are not zeroed when the device manager checkpoint is missing",
    since_minor=15,
)
