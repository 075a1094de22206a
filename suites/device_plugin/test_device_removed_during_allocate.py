"""A device that leaves the plugin's list while its Allocate is in flight: the API lets a plugin drop a device at
any time (each ListAndWatch response replaces the resource's device set, pkg/kubelet/cm/devicemanager/manager.go
genericDeviceUpdateCallback), and a kubelet must survive it whatever it then decides about the pod.

allocateContainerResources, after Allocate answers, reads each allocated device's topology from
`m.allDevices[resource][dev]` without checking that the device is still there: a device gone from the list is a
nil entry and the kubelet panics (nil pointer dereference; the same lines in module source v1.28.15, v1.34.10,
v1.37.1 and v1.38.0-beta.0; seen upstream in a node e2e failure, kubernetes#95041). The pod stays pending, so
every restart of the kubelet admits it again and panics again, until the pod is gone."""

import pytest

from device_conformance.framework import DEVICE_REMOVED_DURING_ALLOCATE_PANICS, DevicePluginHandle

pytestmark = [pytest.mark.deviceplugin, pytest.mark.disruptive]

# The panic follows the Allocate answer at once (the same goroutine, under the manager's lock); a kubelet that
# survives the answer by this long has passed the code at fault.
AFTER_THE_ANSWER = 5


@pytest.mark.known_bug(DEVICE_REMOVED_DURING_ALLOCATE_PANICS)
def test_device_removed_while_its_allocate_is_in_flight_does_not_crash_the_kubelet(
    node, pod_factory, node_resource, registered_plugin: DevicePluginHandle, shows_known_bug
):
    """The plugin drops the device the kubelet asked for while Allocate is held, then answers it; the kubelet
    stays up. Afterwards the pod is removed, the device listed again and the kubelet running, crashed or not."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    plugin.block("Allocate")
    pod = pod_factory("dropped", ["sleep", "86400"], resources={resource: 1})
    plugin.wait_for_blocked("Allocate")
    [[asked]] = plugin.allocations()[0]
    plugin.remove_device(asked)
    # The kubelet took the new list: its device set is replaced in the same callback that counts capacity.
    node_resource(resource).wait_counts(1, 1)
    try:
        plugin.unblock("Allocate")
        plugin.wait_for_call("Allocate", done=True)
        with shows_known_bug(DEVICE_REMOVED_DURING_ALLOCATE_PANICS):  # the kubelet's panic, quoted from its log
            node.kubelet.stays_up(AFTER_THE_ANSWER, what=f"after Allocate answered for {asked}, no longer listed")
    finally:
        # A crashed kubelet admits the pending pod again at every start and crashes again: the pod goes first.
        pod.force_delete()
        pod.wait_gone()
        plugin.add_device(asked)
        if node.kubelet.pid() == 0:
            node.kubelet.start()
        node.kubelet.wait_healthy()
