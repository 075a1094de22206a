"""The fake device plugin's defects (DevicePluginConfig.defects, `--defect`): one contract violation each, so
`device-conformance certify device-plugin` and the vendor-mode suites can be shown to fail exactly that clause.

How an entry is applied, and how to add one: fakes/common/defects.py. Paths are kubernetes/kubernetes'.
(No re-registration after a kubelet restart is DevicePluginConfig.auto_reregister=False, not a defect.)
"""

from __future__ import annotations

from device_conformance.fakes.common.defects import Defect, DefectRegistry
from device_conformance.fakes.common.faults import ERROR, PANIC, Fault
from device_conformance.fakes.common.panic import with_goroutine

API = "staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto"
MANAGER = "pkg/kubelet/cm/devicemanager/manager.go"

DEVICE_PLUGIN_DEFECTS = DefectRegistry(
    "fake device plugin",
    (
        Defect(
            "duplicate-device-ids",
            breaks="every ListAndWatch response lists the first device twice",
            rule=f"a device's ID is unique ({API} Device.ID); the kubelet keeps a resource's devices by ID "
            f"({MANAGER} genericDeviceUpdateCallback)",
            bends=("defects.listed",),
        ),
        Defect(
            "unstable-device-ids",
            breaks='every ListAndWatch stream after the first renames the devices ("<id>-r<n>")',
            rule=f"a second stream (a kubelet restart) lists the same IDs: checkpointed allocations are matched by "
            f"device ID ({MANAGER})",
            bends=("defects.listed",),
        ),
        Defect(
            "allocate-crash-on-unknown-id",
            breaks="Allocate for an ID the plugin does not advertise kills the process (exit 2, like a Go panic) "
            "instead of answering an error",
            rule=f"an Allocate error fails the pod's admission, not the plugin ({API} Allocate; {MANAGER} "
            "allocateContainerResources)",
            bends=("defects.crash_on_unknown_ids",),
        ),
        Defect(
            "preferred-ignores-must-include",
            breaks="GetPreferredAllocation returns the first available IDs, ignoring must_include_deviceIDs",
            rule=f"the preferred allocation includes every must-include ID ({API} "
            "ContainerPreferredAllocationRequest.must_include_deviceIDs)",
            bends=("defects.preferred",),
        ),
        Defect(
            "allocate-first-container-only",
            breaks="an Allocate with several container requests is answered for the first only",
            rule=f"one container response per container request ({API} AllocateResponse.container_responses)",
            bends=("defects.answered_containers",),
        ),
        Defect(
            "prestart-error",
            breaks="PreStartContainer fails (INTERNAL) on every call",
            rule=f"PreStartContainer for allocated IDs succeeds when the plugin asks for it ({API} "
            "DevicePluginOptions.pre_start_required, PreStartContainer); its error fails the container's start",
            fault=Fault("PreStartContainer", ERROR, "INTERNAL", "PreStartContainer failed (defect prestart-error)"),
        ),
        Defect(
            "options-crash",
            breaks="GetDevicePluginOptions panics (exit 2), as a Go plugin returning `nil, nil` from it does when "
            "gRPC marshals the nil message (kubernetes#109016: the kubevirt macvtap plugin once kubelets 1.25+ "
            "call it right after Register)",
            rule=f"GetDevicePluginOptions answers; the kubelet calls it right after Register ({MANAGER} "
            "PluginConnected)",
            fault=Fault(
                "GetDevicePluginOptions",
                PANIC,
                message=with_goroutine(
                    "runtime error: invalid memory address or nil pointer dereference",
                    "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1.(*DevicePluginOptions).Marshal(0x0) "
                    "(defect options-crash)",
                ),
            ),
        ),
        Defect(
            "register-crash",
            breaks="the process panics (exit 2) at registration, before its RegisterRequest is sent, every start",
            rule=f"the plugin registers with the kubelet on kubelet.sock ({API} service Registration)",
            fault=Fault(
                "Register",
                PANIC,
                message=with_goroutine(
                    "assignment to entry in nil map", "main.(*plugin).Register(...) (defect register-crash)"
                ),
            ),
        ),
        Defect(
            "allocate-refuses-handed-out-id",
            breaks="Allocate fails (FAILED_PRECONDITION) for an ID an earlier Allocate of the process handed out: a "
            'plugin that keeps its own "in use" book, though the kubelet tells it of no release',
            rule=f"the kubelet hands an init container's devices to the app containers again ({MANAGER} "
            "devicesToAllocate, reusable devices) and never tells the plugin of a release",
            bends=("defects.refused_ids",),
        ),
        Defect(
            "ids-change-per-start",
            breaks='every device ID carries the process\'s pid ("<id>-p<pid>"): IDs made at start-up (an '
            "enumeration counter, a random UUID) that a plugin restart renames",
            rule=f"a device keeps its ID across plugin restarts: the kubelet's checkpoint holds pods' devices by ID "
            f"({MANAGER} readCheckpoint)",
            bends=("defects.listed",),
        ),
        Defect(
            "list-omits-allocated",
            breaks="LIST_DELAY after Allocate handed a device out, ListAndWatch sends the list without it (a plugin "
            "that lists free devices, not all of them: the node's capacity shrinks while pods hold devices)",
            rule=f"ListAndWatch lists every device of the resource; each response replaces the resource's device "
            f"set ({MANAGER} genericDeviceUpdateCallback)",
            bends=("defects.listed", "service.DevicePluginService.Allocate"),
        ),
        Defect(
            "allocate-mounts-host-dev",
            breaks="every Allocate answer also mounts the node's /dev, read-only, at HOST_DEV_MOUNT (so that "
            "devices plugged later show up): the container sees every device node of the node, those of other "
            "containers' devices too",
            rule=f"a container gets the devices allocated to it and no others ({API} ContainerAllocateResponse "
            "for the container's devices_ids)",
            bends=("defects.with_host_dev",),
        ),
    ),
)
