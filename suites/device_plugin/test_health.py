"""ListAndWatch updates: health flips and device-list changes as node capacity and allocatable."""

import pytest

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
