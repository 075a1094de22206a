"""Restarts: of the kubelet (device pods keep their devices, the plugin re-registers) and of the plugin."""

import pytest

from device_conformance import podresources
from device_conformance.kube import nodes
from device_conformance.wait import kube as wait
from device_conformance.wait.core import Pending, until

pytestmark = pytest.mark.deviceplugin

COUNT_TIMEOUT = 15
RESTART_COUNT_TIMEOUT = 30
POD_TIMEOUT = 60
PODRESOURCES_TIMEOUT = 30


def _devices_of(node, namespace, name, resource):
    """The pod's device IDs per podresources List; right after a kubelet restart the pod shows up
    only once the kubelet has synced it again, so this waits for the pod to be listed."""
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))

    def probe():
        entry = podresources.find_pod(podresources.list_pod_resources(socket), name, namespace)
        return entry if entry is not None else Pending(f"podresources does not list {namespace}/{name}")

    entry = until(probe, what=f"podresources to list {namespace}/{name}", timeout=PODRESOURCES_TIMEOUT)
    return entry.container("main").device_ids.get(resource)


@pytest.mark.disruptive
def test_kubelet_restart_keeps_the_device_pod_and_plugin_reregisters(kube, node, namespace, make_pod, device_plugin):
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("keep", ["sleep", "86400"], resources={resource: 1})
    before = wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    devices = _devices_of(node, namespace, pod.metadata.name, resource)
    assert devices and len(devices) == 1

    node.restart_kubelet()
    plugin.wait_for_registration(count=2, timeout=RESTART_COUNT_TIMEOUT)
    wait.for_node_ready(kube, node.name)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=RESTART_COUNT_TIMEOUT)

    after = wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert after.metadata.uid == before.metadata.uid
    assert after.status.container_statuses[0].restart_count == 0
    assert _devices_of(node, namespace, pod.metadata.name, resource) == devices
    assert len(plugin.calls("Allocate")) == 1, "the running container must not be allocated again"


def test_killed_plugin_zeroes_allocatable_and_respawn_restores_it(kube, node, device_plugin):
    """SIGKILL: the kubelet sees the stream break, devices go unhealthy (capacity kept for the grace
    period); the same plugin started again re-registers and allocatable comes back."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    plugin.kill()
    wait.for_resource_counts(kube, node.name, resource, 2, 0, timeout=5)
    plugin.respawn()
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    assert nodes.ready(kube, node.name)
