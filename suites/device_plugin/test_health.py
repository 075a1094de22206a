"""ListAndWatch updates: health flips and device-list changes as node capacity and allocatable."""

import pytest

from device_conformance.kube import nodes, pods
from device_conformance.wait import kube as wait
from device_conformance.wait.core import stays

pytestmark = pytest.mark.deviceplugin

COUNT_TIMEOUT = 15


@pytest.fixture
def registered(kube, node, device_plugin):
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    wait.for_resource_counts(kube, node.name, plugin.config.resource_name, 2, 2, timeout=COUNT_TIMEOUT)
    return plugin


def test_unhealthy_device_leaves_allocatable_but_not_capacity(kube, node, registered):
    """capacity = healthy + unhealthy, allocatable = healthy; and back when the device recovers."""
    resource = registered.config.resource_name
    registered.set_health("dev-1", False)
    wait.for_resource_counts(kube, node.name, resource, 2, 1, timeout=COUNT_TIMEOUT)
    registered.set_health("dev-1", True)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)


def test_added_and_removed_devices_change_both_counts(kube, node, registered):
    resource = registered.config.resource_name
    registered.add_device("dev-2")
    wait.for_resource_counts(kube, node.name, resource, 3, 3, timeout=COUNT_TIMEOUT)
    registered.remove_device("dev-0")
    registered.remove_device("dev-1")
    wait.for_resource_counts(kube, node.name, resource, 1, 1, timeout=COUNT_TIMEOUT)


def test_ended_stream_zeroes_allocatable_keeps_capacity_and_is_not_retried(kube, node, registered):
    """The stream ending counts as a disconnect (devices unhealthy, capacity kept for the grace period);
    the kubelet does not call ListAndWatch again on its own (upstream #125501)."""
    resource = registered.config.resource_name
    assert registered.end_stream("fake stream failure") == 1
    wait.for_resource_counts(kube, node.name, resource, 2, 0, timeout=COUNT_TIMEOUT)

    def one_stream_only():
        calls = registered.calls("ListAndWatch")
        return None if len(calls) == 1 else f"{len(calls)} ListAndWatch calls"

    stays(one_stream_only, what="no ListAndWatch retry", duration=3)


def test_device_turning_unhealthy_under_a_running_pod_does_not_evict_it(kube, node, namespace, make_pod, device_plugin):
    """Upstream DF3: the pod keeps running on its unhealthy device; the device stays out of allocatable
    after the pod is gone, and a new pod asking for it is not admitted while it is unhealthy."""
    plugin = device_plugin(devices=("dev-0",))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 1, 1, timeout=COUNT_TIMEOUT)
    pod = make_pod("user", ["sleep", "86400"], resources={resource: 1})
    name = pod.metadata.name
    before = wait.for_pod_running_ready(kube, namespace, name, timeout=60)
    plugin.set_health("dev-0", False)
    wait.for_resource_counts(kube, node.name, resource, 1, 0, timeout=COUNT_TIMEOUT)

    def keeps_running():
        current = pods.read(kube, namespace, name)
        if current.metadata.uid != before.metadata.uid or current.status.phase != "Running":
            return pods.summary(current)
        return None

    stays(keeps_running, what=f"pod {namespace}/{name} to keep running on its unhealthy device", duration=5)
    kube.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    wait.for_pod_gone(kube, namespace, name, timeout=60)

    def still_unallocatable():
        seen = nodes.resource_counts(kube, node.name, resource)
        return None if seen == (1, 0) else f"capacity/allocatable {seen}"

    stays(still_unallocatable, what=f"{resource} to stay 1/0 while dev-0 is unhealthy", duration=3)
    late = make_pod("late", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    failed = wait.for_admission_failure(kube, namespace, late.metadata.name, timeout=60)
    assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
