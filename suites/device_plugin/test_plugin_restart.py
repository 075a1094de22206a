"""The plugin side going away and coming back: restarts, re-registration, two instances in a rollout.

Every count wait here allows for a re-registration (DEVICE_COUNTS_AFTER_RESTART), the first one too.
Devices a pod holds are checked against the IDs of its Allocate call (`allocations`), never only
against an earlier podresources answer (which may be empty)."""

import pytest
from device_conformance.fixtures.device_plugins import allocations

from device_conformance.framework import PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE, assert_lists, podresources, timeouts

pytestmark = pytest.mark.deviceplugin

STEADY_FOR = 5  # how long counts must hold still while a second instance comes or goes


@pytest.mark.scenario("DP7")
def test_restarted_plugin_keeps_assignments_and_serves_new_pods(pod_factory, node_resource, register_plugin):
    """Upstream DP7 and kubernetes#62773: after the plugin process dies and starts again, allocatable comes
    back, the running pod keeps its device, and a new pod gets the other device."""
    plugin = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    first = pod_factory("first", ["sleep", "86400"], resources={resource: 1})
    first.wait_running()
    [held] = allocations(plugin, 1)
    assert_lists(first, resource, held, "before the plugin restart")

    plugin.kill()
    counts.wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    plugin.respawn()
    again = plugin.wait_for_registration(count=2)
    assert again.pid == plugin.pid, f"registration #2 came from pid {again.pid}, the respawned plugin is {plugin.pid}"
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)

    assert_lists(first, resource, held, "after the plugin restart")
    second = pod_factory("second", ["sleep", "86400"], resources={resource: 1})
    second.wait_running()
    _, other = allocations(plugin, 1, 1)
    assert sorted(held + other) == ["dev-0", "dev-1"], f"second pod got {other}, the first holds {held}"
    served_by = plugin.calls("Allocate")[1].pid
    assert served_by == plugin.pid, f"the second pod's Allocate went to pid {served_by}, not the respawned {plugin.pid}"
    assert_lists(second, resource, other, "the second pod")


@pytest.mark.scenario("DM-U1")
def test_reregistration_with_other_devices_replaces_the_device_list(node, node_resource, register_plugin):
    """The plugin re-registers on a new socket with a different device list (as an upgraded plugin
    does): the old devices go (upstream manager_test.go re-registration, 2 -> 1)."""
    plugin = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = plugin.config.resource_name
    new_socket = plugin.config.socket_name.replace(".sock", "-v2.sock")
    plugin.stop_serving()
    plugin.set_devices(["dev-9"])
    plugin.start_serving(new_socket)
    reg = plugin.register(socket_name=new_socket)
    assert reg.ok, f"re-registration on {new_socket} refused: {reg.error}"
    node_resource(resource).wait_counts(1, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    streams = [call.socket for call in plugin.calls("ListAndWatch")]
    assert new_socket in streams, f"no ListAndWatch on {new_socket}; streams were opened on {streams}"
    allocatable = podresources.allocatable_resources(str(node.host_path(podresources.DEFAULT_SOCKET)))
    assert allocatable.device_ids.get(resource) == ["dev-9"], allocatable.device_ids.get(resource)


@pytest.mark.scenario("DP-M1")
@pytest.mark.known_bug(PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE)
def test_rollout_of_a_second_instance_keeps_the_resource_available(
    pod_factory, node_resource, device_plugin, register_plugin
):
    """Upstream device_plugin_multiple_test (#121994, #127803, fixed by #135437): a second
    instance for the same resource on its own socket takes over; the first one going away must not
    take the resource with it."""
    old = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = old.config.resource_name
    counts = node_resource(resource)
    pod1 = pod_factory("pod1", ["sleep", "86400"], resources={resource: 1})
    pod1.wait_running()

    new = device_plugin(resource=resource, devices=("dev-0", "dev-1"))
    reg = new.wait_for_registration()
    assert reg.ok, f"the second instance was refused: {reg.error}"
    counts.stays_at(2, 2, STEADY_FOR)
    [pod1_devices] = allocations(old, 1)
    pod2 = pod_factory("pod2", ["sleep", "86400"], resources={resource: 1})
    pod2.wait_running()
    [pod2_devices] = allocations(new, 1)  # the newest registration serves Allocate
    allocations(old, 1)
    assert_lists(pod2, resource, pod2_devices, "pod2")

    old.stop()
    counts.stays_at(2, 2, STEADY_FOR)
    assert_lists(pod1, resource, pod1_devices, "after the first instance stopped")
    pod1.force_delete()
    pod1.wait_gone(timeouts.FORCE_DELETED_POD_GONE)
    pod3 = pod_factory("pod3", ["sleep", "86400"], resources={resource: 1})
    pod3.wait_running()
    _, pod3_devices = allocations(new, 1, 1)
    assert pod3_devices == pod1_devices, f"pod3 got {pod3_devices}; the device pod1 freed is {pod1_devices}"
    assert_lists(pod3, resource, pod3_devices, "pod3")


@pytest.mark.scenario("DP-M2")
def test_second_instance_failing_registration_leaves_the_first_serving(
    pod_factory, node_resource, device_plugin, register_plugin
):
    """Upstream "DP2 slow": a second instance whose GetDevicePluginOptions fails is refused and
    changes nothing; pods keep being served by the first instance."""
    first = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = first.config.resource_name
    broken = device_plugin(resource=resource, devices=("dev-0", "dev-1"), hold_registration=True)
    broken.fail("GetDevicePluginOptions", "INTERNAL", "fake options failure")
    broken.hold_registration(False)
    reg = broken.wait_for_registration(ok=False)
    assert "failed to get device plugin options" in reg.error, reg.error
    node_resource(resource).stays_at(2, 2, STEADY_FOR)
    pod = pod_factory("served", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [granted] = allocations(first, 1)
    assert_lists(pod, resource, granted, "the pod served by the first instance")
    methods = [c.method for c in broken.calls()]
    assert methods == ["GetDevicePluginOptions"], f"the refused instance must get no call after it; it saw {methods}"
