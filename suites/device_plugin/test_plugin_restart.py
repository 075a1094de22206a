"""The plugin side going away and coming back: restarts, re-registration, two instances in a rollout.

Every count wait here allows for a re-registration (DEVICE_COUNTS_AFTER_RESTART), the first one too."""

import pytest

from device_conformance import podresources, timeouts
from device_conformance.expectations.deviceplugin import PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE

pytestmark = pytest.mark.deviceplugin

STEADY_FOR = 5  # how long counts must hold still while a second instance comes or goes


@pytest.mark.scenario("DP7")
def test_restarted_plugin_keeps_assignments_and_serves_new_pods(pod_factory, node_resource, register_plugin):
    """Upstream DP7 and bug 2 (#62773): after the plugin process dies and starts again, allocatable comes
    back, the running pod keeps its device, and a new pod gets the other device."""
    plugin = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    first = pod_factory("first", ["sleep", "86400"], resources={resource: 1})
    first.wait_running()
    held = first.devices(resource)

    plugin.kill()
    counts.wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    plugin.respawn()
    assert plugin.wait_for_registration(count=2).pid == plugin.pid, "the respawned process registered"
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)

    assert first.devices(resource) == held
    second = pod_factory("second", ["sleep", "86400"], resources={resource: 1})
    second.wait_running()
    other = second.devices(resource)
    assert other and other != held, f"second pod got {other}, the first holds {held}"


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
    assert plugin.register(socket_name=new_socket).ok
    node_resource(resource).wait_counts(1, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    assert any(call.socket == new_socket for call in plugin.calls("ListAndWatch"))
    allocatable = podresources.allocatable_resources(str(node.host_path(podresources.DEFAULT_SOCKET)))
    assert allocatable.device_ids.get(resource) == ["dev-9"], allocatable.device_ids.get(resource)


@pytest.mark.scenario("DP-M1")
@pytest.mark.known_bug(PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE)
def test_rollout_of_a_second_instance_keeps_the_resource_available(
    pod_factory, node_resource, device_plugin, register_plugin
):
    """Upstream device_plugin_multiple_test (bug 9: #121994, #127803, fixed by #135437): a second
    instance for the same resource on its own socket takes over; the first one going away must not
    take the resource with it."""
    old = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = old.config.resource_name
    counts = node_resource(resource)
    pod1 = pod_factory("pod1", ["sleep", "86400"], resources={resource: 1})
    pod1.wait_running()

    new = device_plugin(resource=resource, devices=("dev-0", "dev-1"))
    assert new.wait_for_registration().ok
    counts.stays_at(2, 2, STEADY_FOR)
    pod2 = pod_factory("pod2", ["sleep", "86400"], resources={resource: 1})
    pod2.wait_running()
    assert len(new.calls("Allocate")) == 1, "the newest registration serves Allocate"

    old.stop()
    counts.stays_at(2, 2, STEADY_FOR)
    pod1_devices = pod1.devices(resource)
    pod1.force_delete()
    pod1.wait_gone(timeouts.FORCE_DELETED_POD_GONE)
    pod3 = pod_factory("pod3", ["sleep", "86400"], resources={resource: 1})
    pod3.wait_running()
    assert pod3.devices(resource) == pod1_devices


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
    assert len(first.calls("Allocate")) == 1 and broken.calls("Allocate") == []
