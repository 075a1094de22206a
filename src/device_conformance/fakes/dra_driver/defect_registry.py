"""The fake DRA driver's defects (DriverConfig.defects, `--defect`, $DC_DRA_DRIVER_DEFECTS): each breaks one promise
a real driver makes, so a suite or `device-conformance certify dra-driver` can show that its verdict depends on it.

How an entry is applied, and how to add one: fakes/common/defects.py. Paths are kubernetes/kubernetes' unless
named.
"""

from __future__ import annotations

from device_conformance.fakes.common.defects import Defect, DefectRegistry
from device_conformance.fakes.common.faults import ERROR, Fault

API = "staging/src/k8s.io/kubelet/pkg/apis/dra/v1/api.proto"
MANAGER = "pkg/kubelet/cm/dra/manager.go"
CDI_SPEC = "the CDI specification (cncf-tags/container-device-interface SPEC.md)"
PREPARER = "claims.ClaimPreparer"
HEALTH_TYPES = "staging/src/k8s.io/kubelet/pkg/apis/dra-health/v1/types.go"
HEALTH_API = "staging/src/k8s.io/kubelet/pkg/apis/dra-health/v1/api.proto"

DRA_DRIVER_DEFECTS = DefectRegistry(
    "fake DRA driver",
    (
        Defect(
            "prepare-without-cdi",
            breaks="NodePrepareResources answers every device without CDI device IDs (the spec file is still "
            "written), so the kubelet hands no CDI device to the runtime and the container sees nothing",
            rule=f"the kubelet passes the runtime exactly the CDI IDs the answer names ({API} Device.cdi_device_ids; "
            f"{MANAGER} GetResources)",
            bends=(f"{PREPARER}._defective",),
        ),
        Defect(
            "prepare-first-device-only",
            breaks="a claim with several devices is answered with its first device only",
            rule=f"the answer names the devices of the claim's allocation ({API} NodePrepareResourceResponse.devices)",
            bends=(f"{PREPARER}._defective",),
        ),
        Defect(
            "prepare-keeps-lost-cdi-spec",
            breaks="a claim the driver already prepared is answered from its state without writing its CDI spec "
            "again when the file is gone (a node reboot empties /var/run/cdi)",
            rule="preparing again after a reboot restores what the runtime needs (kubernetes#141433, fixed in "
            "kubernetes-sigs/dra-example-driver#259; the kubelet prepares again for it, kubernetes#141966)",
            bends=(f"{PREPARER}._restore_lost_spec",),
        ),
        Defect(
            "prepare-rejects-repeat",
            breaks="preparing a claim this process holds prepared again fails in the claim's error (\"already "
            'prepared"); the in-memory bookkeeping behind it is lost on restart (dra-driver-cpu#175)',
            rule=f"NodePrepareResources is idempotent: the kubelet retries and prepares again after its own restart "
            f"({MANAGER} PrepareResources)",
            bends=(f"{PREPARER}.prepare",),
        ),
        Defect(
            "prepare-unknown-claim-succeeds",
            breaks="a claim the driver has no allocation for is answered as prepared, with no error and no devices, "
            "so the kubelet starts the pod without what the claim asked for",
            rule=f'a claim that cannot be prepared gets an error: "If non-empty, preparing the ResourceClaim '
            f'failed" ({API} NodePrepareResourceResponse.error)',
            bends=(f"{PREPARER}._prepare",),
        ),
        Defect(
            "prepare-one-claim-per-call",
            breaks='NodePrepareResources with several claims fails as a whole ("one claim per call"), so a pod with '
            "two claims of this driver never starts (with a made-up claim a whole-call error is allowed, so the "
            "certifier sees it with two real claims, after the restart)",
            rule=f"the kubelet sends a pod's claims for one driver together ({MANAGER} Manager.prepareResources)",
            bends=("service.DraServicer.NodePrepareResources",),
        ),
        Defect(
            "prepare-crash-on-unknown-claim",
            breaks="preparing a claim the driver has no allocation for panics (the process exits 2 after printing "
            '"panic: ..."), so a certifier must report the crash in one clause and go on',
            rule=f"an unknown claim gets its error in the answer ({API} NodePrepareResourceResponse.error), the "
            "driver keeps serving",
            bends=(f"{PREPARER}._prepare",),
        ),
        Defect(
            "unprepare-keeps-cdi",
            breaks="NodeUnprepareResources leaves the claim's CDI spec file behind",
            rule="the driver removes what it prepared for the claim (kubernetes-sigs/dra-example-driver "
            "cmd/dra-example-kubeletplugin/cdi.go DeleteClaimSpecFile)",
            bends=(f"{PREPARER}.unprepare",),
        ),
        Defect(
            "unprepare-unknown-claim-error",
            breaks="unpreparing a claim this process never prepared fails",
            rule=f"the kubelet unprepares the claims of its checkpoint after restarts, known to the driver or not "
            f"({MANAGER} reconcile loop)",
            bends=(f"{PREPARER}.unprepare",),
        ),
        Defect(
            "unprepare-rejects-repeat",
            breaks="unpreparing a claim this process prepared and already unprepared fails",
            rule=f"NodeUnprepareResources is idempotent: the kubelet retries until it sees success ({MANAGER} "
            "UnprepareResources)",
            bends=(f"{PREPARER}.unprepare",),
        ),
        Defect(
            "cdi-invalid-version",
            breaks="the CDI spec files carry a cdiVersion no CDI release has",
            rule=f"cdiVersion names a released version of {CDI_SPEC}",
            bends=(f"{PREPARER}._prepare",),
        ),
        Defect(
            "restart-renames-cdi-devices",
            breaks="CDI device names carry the process ID and claims prepared before a restart are prepared afresh, "
            "so the kubelet's recorded CDI IDs no longer match after a driver restart",
            rule=f"claims stay prepared in the kubelet's checkpoint across driver restarts ({MANAGER}); preparing "
            "again after a restart gives the same answer (kubernetes#141966)",
            bends=(f"{PREPARER}._cdi_device", f"{PREPARER}._prepare"),
        ),
        Defect(
            "cdi-claim-edits-global",
            breaks="every claim's devices go into one CDI spec the driver keeps for all its claims "
            "(<driver>-claims.json), each claim's device edits both in its device and in the spec-level "
            "containerEdits: a container of one claim gets the env of every other claim prepared before it started",
            rule=f"a claim's edits belong to its devices: spec-level containerEdits apply to every device of the spec "
            f"({CDI_SPEC})",
            bends=(f"{PREPARER}._prepare", f"{PREPARER}._restore_lost_spec", f"{PREPARER}.unprepare"),
        ),
        Defect(
            "health-stream-error",
            breaks="every NodeWatchResources ends at once with INTERNAL (a health monitor that never starts), although "
            "the driver advertises DRAResourceHealth: the kubelet calls again every 5 s and never gets health",
            rule=f"a DRAResourceHealth version is advertised by a plugin which provides an implementation of it "
            f"({HEALTH_TYPES} DRAResourceHealthService); UNIMPLEMENTED, not another error, declines it "
            "(pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go add())",
            fault=Fault(
                "NodeWatchResources",
                ERROR,
                "INTERNAL",
                "device health monitor is not running (defect health-stream-error)",
            ),
        ),
        Defect(
            "health-report-unnamed-devices",
            breaks="every DeviceHealth names its device with an empty pool name, so the kubelet matches it to no "
            "allocated device and the pod status never shows its health",
            rule=f"a DeviceIdentifier names the pool which contains the device and the device's name in it "
            f"({HEALTH_API} DeviceIdentifier); no ResourceSlice pool has an empty name (pkg/apis/resource/validation)",
            bends=("driver.Driver._add_dra",),
        ),
    ),
)
