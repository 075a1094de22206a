"""Every limit the suites' waits use, in one place: seconds, each named for what it waits on, with the
upstream constant or behaviour behind it.

A limit is not how long a step takes (docs/benchmarks.md: a pod runs in under a second, a registered
plugin's devices reach node status in about 1.5 s) but how long a correct kubelet may take on a loaded
2-core CI machine before the wait gives up and says what it last saw. Raising one hides slowness,
lowering one makes a correct kubelet fail: change a value only with the upstream source it rests on.

Durations a test holds a condition for (`stays`) are part of the claim a test makes and stay with it.
"""

from __future__ import annotations

# -- Upstream periods the limits rest on ------------------------------------------------------------

# The kubelet posts capacity/allocatable with node status every nodeStatusUpdateFrequency: 1 s in the
# local provider's kubelet config (providers/local/configs.py); the kubelet's own default, which kind
# keeps, is 10 s (pkg/kubelet/apis/config/v1beta1/defaults.go).
NODE_STATUS_UPDATE_FREQUENCY = 1

# A device plugin endpoint whose plugin went away keeps its capacity this long; then the device manager
# drops the resource (pkg/kubelet/cm/devicemanager/endpoint.go endpointStopGracePeriod = 5 * time.Minute).
ENDPOINT_STOP_GRACE_PERIOD = 5 * 60

# A pod worker syncs its pod again every syncFrequency (default 1m, pkg/kubelet/apis/config/v1beta1/
# defaults.go), jittered by up to half of it (pkg/kubelet/pod_workers.go workerResyncIntervalJitterFactor
# = 0.5). A failed NodePrepareResources does not fail the sync (pkg/kubelet/kuberuntime/
# kuberuntime_manager.go SyncPod logs it and emits FailedPrepareDynamicResources), so the next attempt
# comes only with that resync: 60-90 s later.
POD_RESYNC_PERIOD = 60
POD_RESYNC_JITTER = 0.5

# The DRA manager unprepares claims of pods it no longer knows in a reconcile loop
# (pkg/kubelet/cm/dra/manager.go defaultReconcilePeriod = 60 s; first run once all pod sources are ready).
DRA_RECONCILE_PERIOD = 60

# The kubelet gives up on a DRA driver's NodePrepareResources / NodeUnprepareResources after this long
# (pkg/kubelet/cm/dra/plugin/dra_plugin.go defaultClientCallTimeout = 45 * time.Second, since 1.31); the call
# ends CANCELLED at the driver and the kubelet tries again later.
DRA_CALL_TIMEOUT = 45

# The kubelet deletes a DRA driver's ResourceSlices this long after its last plugin instance went away
# (pkg/kubelet/cm/dra/plugin defaultWipingDelay = 30 * time.Second).
DRA_WIPING_DELAY = 30

# The device-taint-eviction controller rewrites a DeviceTaintRule's status at most this often while an
# eviction is in progress (pkg/controller/devicetainteviction/device_taint_eviction.go ruleStatusPeriod).
DEVICE_TAINT_RULE_STATUS_PERIOD = 10

# -- Cluster and namespaces -------------------------------------------------------------------------

# Node Ready again after the kubelet restarted, was swapped or the node "rebooted".
NODE_READY = 120
# The default ServiceAccount of a new namespace (the controller-manager's serviceaccount controller).
NAMESPACE_READY = 60

# -- Pods -------------------------------------------------------------------------------------------

# A device-plugin pod from creation to Running and Ready, or to its admission failure (Failed): the
# scheduler, one Allocate call and a local image (imagePullPolicy Never).
POD_START = 60
# What wait/kube.py allows when a caller names no limit (smoke tests: also after kubelet restarts).
POD_START_UNNAMED = 120
# A pod object gone after its deletion, when a caller names no limit.
POD_GONE = 120
# A line in a running container's log (the container has to be started and have written it).
POD_LOG_LINE = 30
# The kubelet's podresources API lists a running pod (right after a kubelet restart only once the pod
# is synced again), or stops listing a removed one.
PODRESOURCES_LISTED = 30

# -- Device plugin manager --------------------------------------------------------------------------

# A registered plugin's device count or health change reaches node status: ListAndWatch update, the
# device manager's callback, the next node status update (NODE_STATUS_UPDATE_FREQUENCY).
DEVICE_COUNTS = 15
# The same when a kubelet or plugin restart comes first: the plugin registers again (the kubelet dials
# back, GetDevicePluginOptions, ListAndWatch) before the counts can change.
DEVICE_COUNTS_AFTER_RESTART = 30
# A kubelet starting without kubelet_internal_checkpoint zeroes extended resources while it registers the
# node, before it reports Ready (ShouldResetExtendedResourceCapacity, kubernetes PR #77699).
EXTENDED_RESOURCE_RESET = 10
# How late after ENDPOINT_STOP_GRACE_PERIOD an expired endpoint may still be reported: the device
# manager notices expiry at its next node status update, then the status has to be written.
ENDPOINT_EXPIRY_SLACK = 30
# A kubelet swapped for another version's binary: the node reports its version, plugins registered
# again, pods running again (upgrade tests).
KUBELET_SWAP = 60

# -- DRA manager ------------------------------------------------------------------------------------

# The kubelet's plugin manager registers a driver whose registration socket appeared: plugin watcher
# (inotify), GetInfo, NotifyRegistrationStatus (pkg/kubelet/pluginmanager).
DRA_REGISTRATION = 30
# After GetInfo failed: the plugin manager retries with exponential backoff from 500 ms, doubling
# (pkg/util/goroutinemap/exponentialbackoff initialDurationBeforeRetry).
DRA_REGISTRATION_RETRY = 60
# The fake driver's ResourceSlice published and seen through the API server.
DRA_SLICE_PUBLISHED = 30
# A claim pod from creation to Running and Ready, allowing one pod resync: the first
# NodePrepareResources can fail with "fetch ResourceClaim ... forbidden ... no relationship found between
# node and this object", because the node authorizer learns pod -> claim from
# pod.status.resourceClaimStatuses through its own informer, which can lag the kubelet (seen here under
# load); prepare is retried only at the next resync (POD_RESYNC_PERIOD, POD_RESYNC_JITTER). The wait
# still ends as soon as the pod runs.
CLAIM_POD_START = 120
# A claim pod whose driver keeps failing its prepare: the limit on a runaway, not on a slow start (each failed
# prepare the kubelet reports gives a claim pod's start another CLAIM_POD_START: wait/dra.py with_prepare_retries).
CLAIM_POD_START_CEILING = 600
# A failed NodePrepareResources retried at the next pod resync: at most 90 s, plus the pod starting.
PREPARE_RETRY_AT_RESYNC = 120
# A claim pod started again by a restarted kubelet whose first prepare failed or was blocked: the new
# kubelet re-registers the driver and prepares at its first pod sync.
CLAIM_POD_START_AFTER_KUBELET_RESTART = 90
# A deleted claim pod's claim unprepared (NodeUnprepareResources) and the pod object gone.
UNPREPARE = 60
# The same after the kubelet or the driver restarted, or when the driver has to come back first.
UNPREPARE_AFTER_RESTART = 90
# A failed NodeUnprepareResources retried by the pod worker's termination loop, with backoff.
UNPREPARE_RETRY = 90
# The fixture's teardown: every claim of a test's driver unprepared once its pods are deleted.
DRA_DRAIN = 90
# A claim of a pod the kubelet never knew, unprepared by the reconcile loop: up to two periods (the first
# run waits for all pod sources) plus the call.
DRA_RECONCILE = 150
# A driver gone for good: its slices wiped after DRA_WIPING_DELAY, plus the deletion reaching the API.
DRA_SLICE_WIPE = DRA_WIPING_DELAY + 20
# A ResourceClaim reaching a state (generated for a pod, allocated, reserved, deleted), a ResourceSlice
# count, a pod condition or event about claims, when a caller names no limit.
CLAIM = 60
# The kubelet logs its gRPC connection to a driver (dra_plugin_manager "Connection changed", -v=2).
DRA_CONNECTION = 30
# The kubelet opens the driver's DRAResourceHealth stream (KEP-4680) and retries it every few seconds.
DRA_HEALTH_STREAM_OPEN = 30
# A health update pushed on that stream shows in the pod's containerStatuses[].allocatedResourcesStatus.
DRA_HEALTH_REPORTED = 30
# A device plugin's health change (ListAndWatch) shows in the pod's allocatedResourcesStatus: the device
# manager pushes the pod to the status manager at once (ManagerImpl.genericDeviceUpdateCallback).
DEVICE_HEALTH_REPORTED = 30
# The same, when it must come from the device manager's own push (ManagerImpl.genericDeviceUpdateCallback ->
# the sync loop) and not from the pod's next resync (POD_RESYNC_PERIOD, 60-90 s later): well under the resync.
DEVICE_HEALTH_PUSHED = 10

# -- Device taints ----------------------------------------------------------------------------------

# A NoExecute taint (or the end of tolerationSeconds) to the pod's DisruptionTarget condition and
# deletion, or a cancelled eviction to its event: the device-taint-eviction controller reacts to events.
TAINT_EVICTION = 30
# A DeviceTaintRule status condition updated: at most every DEVICE_TAINT_RULE_STATUS_PERIOD.
TAINT_RULE_STATUS = 30
# A ValidatingAdmissionPolicy in force: the API server loads policies asynchronously.
ADMISSION_POLICY_ACTIVE = 30
# A pod deleted or replaced to the resourceclaim controller's first try at dropping its reservedFor entry: it
# reacts to the informer's event (pkg/controller/resourceclaim/controller.go enqueuePod).
STALE_RESERVATION_SEEN = 30

# -- Device plugin suites: waits with no name above -------------------------------------------------

# A pod deleted with grace 0 gone from the API: the API server deletes it at once, without the kubelet
# (DeleteOptions.gracePeriodSeconds: "The value zero indicates delete immediately").
FORCE_DELETED_POD_GONE = 60
# A SIGKILLed plugin's devices out of allocatable: its ListAndWatch stream breaks with the process, the
# endpoint is marked stopped (devices unhealthy, capacity kept: pkg/kubelet/cm/devicemanager/manager.go
# markResourceUnhealthy), then one node status update (NODE_STATUS_UPDATE_FREQUENCY).
DEVICE_COUNTS_AFTER_PLUGIN_KILL = 5
# The kubelet's container garbage collection period: ContainerGCPeriod = time.Minute (pkg/kubelet/kubelet.go,
# the same from 1.31 to 1.37), run by StartGarbageCollection with wait.UntilWithContext: once at start
# (cmd/kubelet/app/server.go createAndInitKubelet), then a minute after each pass ends.
KUBELET_CONTAINER_GC_PERIOD = 60
# The sandbox of a pod force-deleted while the kubelet was down, counted from the kubelet's START. Only the
# container GC removes sandboxes (pkg/kubelet/kuberuntime/kuberuntime_gc.go evictSandboxes; there is no
# other RemovePodSandbox caller in pkg/kubelet). Its pass at start finds the orphan still running (a READY
# sandbox is "active" and kept); pod housekeeping (HandlePodCleanups) stops it seconds later, and the next
# pass, one period later, removes it. Slack: the kubelet's start up to StartGarbageCollection and both
# passes' own time on a loaded node.
ORPHAN_SANDBOX_REMOVED = KUBELET_CONTAINER_GC_PERIOD + 30
# A line the kubelet writes to its own log while it starts (e.g. the device manager reading its checkpoint),
# read through the provider's kubelet log.
KUBELET_LOG_LINE = 30

# -- Added for the converted DRA, taint and smoke suites ---------------------------------------------

# dra_manager_state rewritten without a claim once its NodeUnprepareResources returned: the DRA manager
# drops the claim from its cache and checkpoints right after the call (pkg/kubelet/cm/dra/manager.go
# unprepareResources, syncToCheckpoint).
DRA_CHECKPOINT_UPDATED = 30
# A kubelet continued (SIGCONT) after a SIGSTOP answers /healthz again: nothing restarts, the process
# resumes where it stopped, so this is only the health server's next answer under load.
KUBELET_HEALTHY_AFTER_THAW = 30

# -- "Nothing happens" windows of the DRA and taint suites (verdicts that catch broken kubelets) ------
# Each runs in the background (wait.core.watch) from the moment the guarded state exists, so several
# windows overlap with each other and with the tests of their module instead of adding up.

# A claim the kubelet has prepared (or must not prepare) gets no NodePrepareResources call for this long
# after a kubelet restart: upstream test/e2e_node/dra_test.go "must not call NodePrepareResources for
# deleted pod after Kubelet restart" holds it for retryTestTimeout = kubeletRetryPeriod (90 s) + 30 s, an
# upper bound of one failed pod start followed by the next attempt.
DRA_NO_PREPARE_WINDOW = 90 + 30
# A pod whose device is tainted NoSchedule, or selected by an effect-None DeviceTaintRule, or not selected
# by a NoExecute rule at all, is not evicted for this long: the device-taint-eviction controller
# (pkg/controller/devicetainteviction/device_taint_eviction.go) acts on informer events within seconds and
# rewrites rule status every DEVICE_TAINT_RULE_STATUS_PERIOD; a minute is six of those periods, the same
# as upstream test/e2e_node/dra_test.go podInPendingStateTimeout (60 s) for "nothing happens" to a pod.
TAINT_NO_EVICTION_WINDOW = 60
# -- Device plugin suites: windows a condition must hold for (upstream's Consistently durations) ------
# These are claims, not limits: a shorter window lets a kubelet that acts late pass. Long ones run in the
# background (wait.core.watch, started by a module fixture) so they overlap the module's other tests.

# After a device plugin change nothing may happen for devicePluginUpdateTimeout = 1 min: the pod on a
# device that turned unhealthy stays Running, and the kubelet never calls ListAndWatch again after the
# stream ended or failed (test/e2e_node/device_plugin_failures_test.go, v1.37.1: "will set allocatable to
# zero when a single device became unhealthy" and the two "kubelet will not retry" cases).
DEVICE_PLUGIN_UPDATE_WINDOW = 60
# After its pod is gone an unhealthy device of a live plugin stays out of allocatable, capacity kept,
# past the endpoint grace period: upstream's limit for "when pod is deleted, nothing changes" is
# devicePluginGracefulTimeout + 1 min (same file and test; endpointStopGracePeriod, pkg/kubelet/cm/
# devicemanager/types.go). Held for that long in the slow grace-period module.
UNHEALTHY_DEVICE_UNALLOCATABLE_WINDOW = ENDPOINT_STOP_GRACE_PERIOD + 60
# A Succeeded pod whose plugin is gone stays Succeeded after a kubelet restart: the kubelet gives no sign
# of a re-admission, so upstream waits 1 min after the node is Ready again (test/e2e_node/
# device_plugin_test.go, v1.37.1: "Pod should still be in Succeed state", kubernetes#126341).
SUCCEEDED_POD_NOT_READMITTED_WINDOW = 60

# A stopped DRA driver's devices turn Unknown in the pod status: upstream's e2e waits up to 2 minutes
# (test/e2e_node/dra_test.go, "Resource Health", the stopped-plugin case).
DRA_HEALTH_UNKNOWN = 120

# -- Processes the harness starts: budgets counted in their progress, not in wall time ----------------
# wait/progress.py: a start goes on while the process uses CPU, is runnable or writes its log; a live
# process gives up only after a STALL without any of these (asleep and silent: hung, or SIGSTOPped), and
# only a process busy forever reaches the CEILING. A fixed wall-clock budget lost to a 2-core machine at
# load 8.7 (every Python process compiling its imports from source): a fake that answers 0.3 s after its
# start when idle had not opened its control socket after 20 s.

# A fake device plugin or DRA driver to answer on its control socket (about 0.3 s of CPU when idle).
FAKE_START_STALL = 60
FAKE_START_CEILING = 600
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler, containerd, the kubelet, a private dockerd
# to answer its health check: each logs as it starts, and the ones it waits on are up already.
COMPONENT_START_STALL = 120
COMPONENT_START_CEILING = 900
# `ctr images import` of a local OCI tarball: ctr streams it, containerd unpacks it (both watched).
IMAGE_IMPORT_STALL = 120
IMAGE_IMPORT_CEILING = 1800
# The node agent's pod to run and its agent to answer: the cluster's own progress (pod status changes).
NODE_AGENT_STALL = 180
NODE_AGENT_CEILING = 900
