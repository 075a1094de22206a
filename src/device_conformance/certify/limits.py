"""How long the certifier waits for a subject, named for the upstream behaviour each limit stands for."""

from __future__ import annotations

# The kubelet dials a device plugin's endpoint with a 10 s deadline
# (pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go, dial).
DP_DIAL_TIMEOUT = 10.0
# A subject the tool started gets this long to serve and register (process start-up included).
REGISTER_TIMEOUT = 30.0
# A process registering several resources (NVIDIA k8s-device-plugin: one plugin per resource, started one after the
# other, each with its own Register: internal/plugin/server.go Start) registers the next within moments of the
# previous: this long after another resource's first registration, the one asked for (--resource) counts as never
# registered, and what was registered is judged (DP-REG-RESOURCE FAILs on its name).
RESOURCE_AFTER_ANOTHER = 10.0
# ListAndWatch has no upstream deadline, but the resource has no devices until the first list arrives;
# a plugin that needs longer than this to list what it already knows is not "prompt".
FIRST_LIST_TIMEOUT = 10.0
# GetDevicePluginOptions and the certifier's other unary calls to a device plugin: the kubelet asks for the options
# within the plugin's own Register call and dials with a 10 s deadline (pkg/kubelet/cm/devicemanager/plugin/v1beta1/
# client.go dial; manager.go PluginConnected).
DP_RPC_TIMEOUT = 10.0
# Allocate and GetPreferredAllocation: the kubelet waits for them without a deadline of its own (pkg/kubelet/cm/
# devicemanager/endpoint.go allocate, getPreferredAllocation: the admission's context), every admission on the node
# waiting with it; this long only catches a plugin that never answers.
DP_ALLOCATE_TIMEOUT = 120.0
# PreStartContainer: the kubelet's own deadline (deviceplugin/v1beta1 constants.go
# KubeletPreStartContainerRPCTimeoutInSecs, endpoint.go preStartContainer).
DP_PRESTART_TIMEOUT = 30.0
# How long after kubelet.sock is re-created a plugin must have registered again (upstream's sample plugin
# and the kubeletplugin helper react within a second through fsnotify; polling plugins need a few).
REREGISTER_TIMEOUT = 30.0
# pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go: GetInfo 1 s, NotifyRegistrationStatus 5 s.
GET_INFO_TIMEOUT = 1.0
NOTIFY_TIMEOUT = 5.0
# pkg/kubelet/cm/dra/plugin/dra_plugin.go (defaultClientCallTimeout): the kubelet's deadline for
# NodePrepare/NodeUnprepareResources.
DRA_CALL_TIMEOUT = 45.0
# Concurrency: how many RPCs the certifier has in flight at once.
CONCURRENT_CALLS = 8
# A call that lost its connection: how long the subject the tool started gets to be seen exiting (it may
# close its socket while dying, before it can be reaped), so the evidence says it crashed.
EXIT_AFTER_BROKEN_CALL = 5.0

# A DRA claim failed in an OK answer (dra/v1 api.proto NodePrepareResourceResponse.error: "If non-empty, preparing
# the ResourceClaim failed", no time limit) is called again (certify/dra_driver.py _call) as the kubelet calls it:
# SyncPod records FailedPrepareDynamicResources and returns without failing the sync
# (pkg/kubelet/kuberuntime/kuberuntime_manager.go), so the pod worker syncs the pod again at its resync, the
# kubelet's SyncFrequency (1 min by default, pkg/kubelet/apis/config/v1beta1/defaults.go) jittered by up to half
# (pkg/kubelet/pod_workers.go completeWork, workerResyncIntervalJitterFactor = 0.5): every 60-90 s, without end.
# A failed unprepare fails the terminating pod's sync (pkg/kubelet/kubelet.go SyncTerminatingPod) and is retried
# after the 10 s back-off (kubelet.go backOffPeriod, jittered by up to half), also without end.
KUBELET_RESYNC_MAX = 90.0
# The certifier gives up on a claim only when it still fails once the kubelet's first two resyncs after the failure
# have passed: the driver's pod would still not have started, so the claim is taken as never succeeding.
DRA_FAILED_CLAIM_RETRY_FOR = 2 * KUBELET_RESYNC_MAX
# Until then it calls again after 2 s, the pause doubling up to 30 s: a driver that recovers in seconds is judged
# within seconds of recovering, one that never does costs 10 calls.
DRA_FAILED_CLAIM_FIRST_PAUSE = 2.0
DRA_FAILED_CLAIM_MAX_PAUSE = 30.0

# DRA-HEALTH (certify/dra_health.py): how long the certifier watches a DRAResourceHealth stream for its first report,
# the kubelet's default health-check timeout (pkg/kubelet/cm/dra/healthinfo.go DefaultHealthTimeout, 30 s), after
# which the kubelet reports a device it was not told about again Unknown; and the kubelet's pause before opening a
# stream that ended again (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go add(): wait.UntilWithContext, 5 s).
DRA_HEALTH_FIRST_REPORT = 30.0
KUBELET_HEALTH_RETRY = 5.0
