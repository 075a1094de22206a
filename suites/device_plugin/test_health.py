"""ListAndWatch updates: health flips and device-list changes as node capacity and allocatable.

Three scenarios hold a condition for upstream's one-minute window (DEVICE_PLUGIN_UPDATE_WINDOW): a pod on a
device that turned unhealthy is not evicted; an unhealthy device whose pod is gone stays out of
allocatable (the slow grace-period module holds that for the grace period + 1 minute); a ListAndWatch
stream that ended is never retried. All start in the module fixture `windows`, so the minute runs while
the module's other tests do, and their tests collect the verdict (Watch.holds()) at the end of the module.
"""

from dataclasses import dataclass

import pytest
from device_conformance.fixtures.device_plugins import allocations, start_plugin, stop_plugins
from device_conformance.fixtures.reports import attach_on_failure
from device_conformance.fixtures.vendor import allocatable_ids
from kubernetes.client import ApiException

from device_conformance.framework import (
    DevicePluginHandle,
    NodeResource,
    PodHandle,
    Watch,
    pods,
    restarted_or_replaced,
    timeouts,
    watch,
)

pytestmark = pytest.mark.deviceplugin

# What the kubelet calls on a plugin that registers and then serves one stream; nothing after that.
ONE_STREAM = ["GetDevicePluginOptions", "ListAndWatch"]


@dataclass
class Windows:
    unhealthy_plugin: DevicePluginHandle  # one device, dev-0, turned unhealthy under `user`
    user: PodHandle
    user_devices: list[str]
    not_evicted: Watch
    vacated_plugin: DevicePluginHandle  # one device, dev-0, turned unhealthy under a pod since deleted
    still_unallocatable: Watch
    ended_plugin: DevicePluginHandle  # its only ListAndWatch stream ended with an error
    ended_counts: NodeResource
    never_retried: Watch


def _running_unchanged(pod: PodHandle) -> str | None:
    """None while the pod is the object it was created as, Running, its container never restarted.
    (A watch takes an exception for an API hiccup, so the pod being gone must be a verdict, not a 404.)"""
    try:
        current = pod.read()
    except ApiException as exc:
        if exc.status == 404:
            return f"{pod} is gone"
        raise
    return pods.summary(current) if restarted_or_replaced(current, pod.uid) else None


@pytest.fixture(scope="module")
def windows(cluster, kube, tmp_path_factory, module_pod_factory):
    node = cluster.nodes[0] if cluster.nodes else pytest.skip("needs node access (local or kind provider)")
    handles: list[DevicePluginHandle] = []
    started: list[Watch] = []
    try:
        unhealthy = start_plugin(node, tmp_path_factory, devices=("dev-0",))
        vacated = start_plugin(node, tmp_path_factory, devices=("dev-0",))
        ended = start_plugin(node, tmp_path_factory)
        handles += [unhealthy, vacated, ended]
        counts = NodeResource(kube, node.name, unhealthy.config.resource_name)
        vacated_counts = NodeResource(kube, node.name, vacated.config.resource_name)
        ended_counts = NodeResource(kube, node.name, ended.config.resource_name)
        counts.wait_counts(1, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        vacated_counts.wait_counts(1, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        ended_counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)

        user = module_pod_factory("user", ["sleep", "86400"], resources={unhealthy.config.resource_name: 1})
        gone = module_pod_factory("gone", ["sleep", "86400"], resources={vacated.config.resource_name: 1})
        user.wait_running()
        gone.wait_running()
        [held] = allocations(unhealthy, 1)
        allocations(vacated, 1)
        unhealthy.set_health("dev-0", False)
        vacated.set_health("dev-0", False)
        assert ended.end_stream("fake stream failure") == 1, "the plugin had no open ListAndWatch stream to end"
        counts.wait_counts(1, 0)
        vacated_counts.wait_counts(1, 0)
        ended_counts.wait_counts(2, 0)
        gone.force_delete()
        gone.wait_gone(timeouts.FORCE_DELETED_POD_GONE)

        def vacated_unallocatable() -> str | None:
            seen = vacated_counts.counts()
            return None if seen == (1, 0) else f"capacity/allocatable {seen}"

        def stream_calls() -> str | None:
            methods = [c.method for c in ended.calls()]
            return None if methods == ONE_STREAM else f"the kubelet called {methods}"

        started.append(
            watch(
                lambda: _running_unchanged(user),
                what=f"{user} to keep running on its unhealthy device",
                duration=timeouts.DEVICE_PLUGIN_UPDATE_WINDOW,
            )
        )
        started.append(
            watch(
                vacated_unallocatable,
                what=f"{vacated_counts}, its only device unhealthy and its pod gone, to stay at 1/0",
                duration=timeouts.DEVICE_PLUGIN_UPDATE_WINDOW,
            )
        )
        started.append(
            watch(
                stream_calls,
                what=f"no call to {ended.config.resource_name} after its stream ended (no ListAndWatch retry)",
                duration=timeouts.DEVICE_PLUGIN_UPDATE_WINDOW,
            )
        )
        yield Windows(unhealthy, user, held, started[0], vacated, started[1], ended, ended_counts, started[2])
    finally:
        for running in started:
            running.cancel()
        stop_plugins(handles)


@pytest.fixture(autouse=True)
def _windows_started(request, windows):
    """Every test of the module starts the windows (the first one opens them) and reports their plugins."""
    for plugin in (windows.unhealthy_plugin, windows.vacated_plugin, windows.ended_plugin):
        attach_on_failure(request.node, f"fake device plugin {plugin.config.resource_name} call log", plugin.report)


@pytest.mark.scenario("DF2", "DF4")
def test_unhealthy_device_leaves_allocatable_but_not_capacity(node, node_resource, registered_plugin):
    """capacity = healthy + unhealthy, allocatable = healthy; and back when the device recovers. podresources
    GetAllocatableResources lists the healthy devices only (pkg/kubelet/cm/devicemanager/manager.go
    GetAllocatableDevices filters allDevices by healthyDevices), the same set as node allocatable."""
    resource = registered_plugin.config.resource_name
    counts = node_resource(resource)
    assert allocatable_ids(node, resource) == ["dev-0", "dev-1"], "GetAllocatableResources, both devices healthy"
    registered_plugin.set_health("dev-1", False)
    counts.wait_counts(2, 1)
    listed = allocatable_ids(node, resource)
    assert listed == ["dev-0"], f"GetAllocatableResources lists {listed} while dev-1 is unhealthy, expected ['dev-0']"
    registered_plugin.set_health("dev-1", True)
    counts.wait_counts(2, 2)
    listed = allocatable_ids(node, resource)
    assert listed == ["dev-0", "dev-1"], f"GetAllocatableResources lists {listed} after dev-1 recovered"


@pytest.mark.scenario("DM-U2")
def test_added_and_removed_devices_change_both_counts(node_resource, registered_plugin):
    counts = node_resource(registered_plugin.config.resource_name)
    registered_plugin.add_device("dev-2")
    counts.wait_counts(3, 3)
    registered_plugin.remove_device("dev-0")
    registered_plugin.remove_device("dev-1")
    counts.wait_counts(1, 1)


@pytest.mark.scenario("DF6")
def test_ended_stream_zeroes_allocatable_keeps_capacity_and_is_not_retried(windows):
    """The stream ending counts as a disconnect (devices unhealthy, capacity kept for the grace period);
    for upstream's minute the kubelet calls the plugin no more (no ListAndWatch retry: #125501)."""
    windows.never_retried.holds()
    seen = windows.ended_counts.counts()
    assert seen == (2, 0), (
        f"{windows.ended_counts}: capacity/allocatable {seen}, expected (2, 0) within the grace period"
    )


@pytest.mark.scenario("DF3")
def test_device_turning_unhealthy_under_a_running_pod_does_not_evict_it(node, pod_factory, windows):
    """Upstream DF3: the pod keeps running on its unhealthy device for upstream's minute and keeps it; a
    device that turned unhealthy under a pod since deleted stays out of allocatable (capacity kept) for
    that minute, and a new pod asking for it is not admitted while it is unhealthy (the grace-period
    module holds the counts for the whole endpoint grace period and a minute more)."""
    windows.not_evicted.holds()
    resource = windows.unhealthy_plugin.config.resource_name
    listed = sorted(windows.user.devices(resource))  # podresources lists a set
    assert listed == sorted(windows.user_devices), (
        f"podresources lists {listed}, the kubelet allocated {windows.user_devices}"
    )

    windows.still_unallocatable.holds()
    plugin = windows.vacated_plugin
    late = pod_factory("late", ["sleep", "86400"], resources={plugin.config.resource_name: 1}, node_name=node.name)
    failed = late.wait_admission_failure()
    assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
    methods = [c.method for c in plugin.calls()]
    assert methods == [*ONE_STREAM, "Allocate"], f"an unhealthy device is never allocated; the plugin saw {methods}"
