"""ListAndWatch updates: health flips and device-list changes as node capacity and allocatable."""

import pytest

from device_conformance import timeouts
from device_conformance.kube import pods
from device_conformance.wait.core import stays

pytestmark = pytest.mark.deviceplugin


@pytest.mark.scenario("DF2", "DF4")
def test_unhealthy_device_leaves_allocatable_but_not_capacity(node_resource, registered_plugin):
    """capacity = healthy + unhealthy, allocatable = healthy; and back when the device recovers."""
    counts = node_resource(registered_plugin.config.resource_name)
    registered_plugin.set_health("dev-1", False)
    counts.wait_counts(2, 1)
    registered_plugin.set_health("dev-1", True)
    counts.wait_counts(2, 2)


@pytest.mark.scenario("DM-U2")
def test_added_and_removed_devices_change_both_counts(node_resource, registered_plugin):
    counts = node_resource(registered_plugin.config.resource_name)
    registered_plugin.add_device("dev-2")
    counts.wait_counts(3, 3)
    registered_plugin.remove_device("dev-0")
    registered_plugin.remove_device("dev-1")
    counts.wait_counts(1, 1)


@pytest.mark.scenario("DF6")
def test_ended_stream_zeroes_allocatable_keeps_capacity_and_is_not_retried(node_resource, registered_plugin):
    """The stream ending counts as a disconnect (devices unhealthy, capacity kept for the grace period);
    the kubelet does not call ListAndWatch again on its own (upstream #125501)."""
    assert registered_plugin.end_stream("fake stream failure") == 1
    node_resource(registered_plugin.config.resource_name).wait_counts(2, 0)

    def one_stream_only():
        calls = registered_plugin.calls("ListAndWatch")
        return None if len(calls) == 1 else f"{len(calls)} ListAndWatch calls"

    stays(one_stream_only, what="no ListAndWatch retry", duration=3)


@pytest.mark.scenario("DF3")
def test_device_turning_unhealthy_under_a_running_pod_does_not_evict_it(
    node, pod_factory, node_resource, register_plugin
):
    """Upstream DF3: the pod keeps running on its unhealthy device; the device stays out of allocatable
    after the pod is gone, and a new pod asking for it is not admitted while it is unhealthy."""
    plugin = register_plugin(("dev-0",))
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    pod = pod_factory("user", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    plugin.set_health("dev-0", False)
    counts.wait_counts(1, 0)

    def evicted_or_stopped(current):
        if current.metadata.uid != pod.uid or current.status.phase != "Running":
            return pods.summary(current)
        return None

    pod.stays(evicted_or_stopped, what="to keep running on its unhealthy device", duration=5)
    pod.force_delete()
    pod.wait_gone(timeouts.FORCE_DELETED_POD_GONE)

    counts.stays_at(1, 0, duration=3)
    late = pod_factory("late", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    failed = late.wait_admission_failure()
    assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
