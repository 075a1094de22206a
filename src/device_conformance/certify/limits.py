"""How long the certifier waits for a subject, named for the upstream behaviour each limit stands for."""

from __future__ import annotations

# The kubelet dials a device plugin's endpoint with a 10 s deadline
# (pkg/kubelet/cm/devicemanager/plugin/v1beta1/client.go, dial).
DP_DIAL_TIMEOUT = 10.0
# A subject the tool started gets this long to serve and register (process start-up included).
REGISTER_TIMEOUT = 30.0
# ListAndWatch has no upstream deadline, but the resource has no devices until the first list arrives;
# a plugin that needs longer than this to list what it already knows is not "prompt".
FIRST_LIST_TIMEOUT = 10.0
# Each unary RPC the certifier makes to a device plugin (the kubelet's Allocate uses no shorter one).
DP_RPC_TIMEOUT = 10.0
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

# A DRA claim failed in an OK answer is called again (certify/dra_driver.py _call), as the kubelet retries the pod's
# prepare and unprepare at each pod sync (pkg/kubelet/cm/dra/manager.go; every 60-90 s there): this many times,
# this far apart, before its error is the verdict.
DRA_FAILED_ANSWER_RETRIES = 3
DRA_FAILED_ANSWER_PAUSE = 2.0
