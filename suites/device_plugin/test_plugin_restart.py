"""The plugin side going away and coming back: restarts, re-registration, two instances in a rollout."""

import pytest

from device_conformance import podresources
from device_conformance.expectations.deviceplugin import PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE
from device_conformance.kube import nodes
from device_conformance.wait import kube as wait
from device_conformance.wait import podresources as wait_podresources
from device_conformance.wait.core import stays

pytestmark = pytest.mark.deviceplugin

COUNT_TIMEOUT = 30
POD_TIMEOUT = 60
STEADY_FOR = 5  # how long counts must hold still while a second instance comes or goes


def _socket(node):
    return str(node.host_path(podresources.DEFAULT_SOCKET))


def _counts_stay(kube, node, resource, counts):
    def probe():
        seen = nodes.resource_counts(kube, node.name, resource)
        return None if seen == counts else f"capacity/allocatable {seen}"

    stays(probe, what=f"{resource} to stay at capacity/allocatable {counts}", duration=STEADY_FOR)


def test_restarted_plugin_keeps_assignments_and_serves_new_pods(kube, node, namespace, make_pod, device_plugin):
    """Upstream DP7 and bug 2 (#62773): after the plugin process dies and starts again, allocatable comes
    back, the running pod keeps its device, and a new pod gets the other device."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    first = make_pod("first", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, first.metadata.name, timeout=POD_TIMEOUT)
    held = wait_podresources.device_ids(_socket(node), namespace, first.metadata.name, resource)

    plugin.kill()
    wait.for_resource_counts(kube, node.name, resource, 2, 0, timeout=COUNT_TIMEOUT)
    plugin.respawn()
    assert plugin.wait_for_registration(count=2).pid == plugin.pid, "the respawned process registered"
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)

    assert wait_podresources.device_ids(_socket(node), namespace, first.metadata.name, resource) == held
    second = make_pod("second", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, second.metadata.name, timeout=POD_TIMEOUT)
    other = wait_podresources.device_ids(_socket(node), namespace, second.metadata.name, resource)
    assert other and other != held, f"second pod got {other}, the first holds {held}"


def test_reregistration_with_other_devices_replaces_the_device_list(kube, node, device_plugin):
    """The plugin re-registers on a new socket with a different device list (as an upgraded plugin
    does): the old devices go (upstream manager_test.go re-registration, 2 -> 1)."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    new_socket = plugin.config.socket_name.replace(".sock", "-v2.sock")
    plugin.stop_serving()
    plugin.set_devices(["dev-9"])
    plugin.start_serving(new_socket)
    assert plugin.register(socket_name=new_socket).ok
    wait.for_resource_counts(kube, node.name, resource, 1, 1, timeout=COUNT_TIMEOUT)
    assert any(call.socket == new_socket for call in plugin.calls("ListAndWatch"))
    allocatable = podresources.allocatable_resources(_socket(node)).device_ids.get(resource)
    assert allocatable == ["dev-9"], allocatable


def test_rollout_of_a_second_instance_keeps_the_resource_available(
    kube, node, namespace, make_pod, device_plugin, known_bug
):
    """Upstream device_plugin_multiple_test (bug 9: #121994, #127803, fixed by #135437): a second
    instance for the same resource on its own socket takes over; the first one going away must not
    take the resource with it."""
    known_bug(PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE)
    old = device_plugin(devices=("dev-0", "dev-1"))
    resource = old.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod1 = make_pod("pod1", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod1.metadata.name, timeout=POD_TIMEOUT)

    new = device_plugin(resource=resource, devices=("dev-0", "dev-1"))
    assert new.wait_for_registration().ok
    _counts_stay(kube, node, resource, (2, 2))
    pod2 = make_pod("pod2", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod2.metadata.name, timeout=POD_TIMEOUT)
    assert len(new.calls("Allocate")) == 1, "the newest registration serves Allocate"

    old.stop()
    _counts_stay(kube, node, resource, (2, 2))
    pod1_devices = wait_podresources.device_ids(_socket(node), namespace, pod1.metadata.name, resource)
    kube.core.delete_namespaced_pod(pod1.metadata.name, namespace, grace_period_seconds=0)
    wait.for_pod_gone(kube, namespace, pod1.metadata.name, timeout=POD_TIMEOUT)
    pod3 = make_pod("pod3", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod3.metadata.name, timeout=POD_TIMEOUT)
    assert wait_podresources.device_ids(_socket(node), namespace, pod3.metadata.name, resource) == pod1_devices


def test_second_instance_failing_registration_leaves_the_first_serving(kube, node, namespace, make_pod, device_plugin):
    """Upstream "DP2 slow": a second instance whose GetDevicePluginOptions fails is refused and
    changes nothing; pods keep being served by the first instance."""
    first = device_plugin(devices=("dev-0", "dev-1"))
    resource = first.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    broken = device_plugin(resource=resource, devices=("dev-0", "dev-1"), hold_registration=True)
    broken.fail("GetDevicePluginOptions", "INTERNAL", "fake options failure")
    broken.hold_registration(False)
    reg = broken.wait_for_registration(ok=False)
    assert "failed to get device plugin options" in reg.error, reg.error
    _counts_stay(kube, node, resource, (2, 2))
    pod = make_pod("served", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert len(first.calls("Allocate")) == 1 and broken.calls("Allocate") == []
