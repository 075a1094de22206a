"""ListAndWatch updates: health flips and device-list changes as node capacity and allocatable.

Three scenarios hold a condition for upstream's one-minute window (DEVICE_PLUGIN_UPDATE_WINDOW): a pod on a
device that turned unhealthy is not evicted; an unhealthy device whose pod is gone stays out of
allocatable (the slow grace-period module holds that for the grace period + 1 minute); a ListAndWatch
stream that ended is never retried. Each has its own module fixture; the `overlapping` marker starts them
together before the module's first test, so the minute runs while the module's other tests do, and their
tests collect the verdict (Watch.holds()) when they run.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from device_conformance.fixtures.cluster import node_with_access
from device_conformance.fixtures.device_plugins import allocations, serving_plugin
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

# The scenarios whose one-minute windows overlap, in the order they start.
SCENARIOS = ("pod_on_unhealthy_device", "unhealthy_device_of_deleted_pod", "ended_listandwatch_stream")
pytestmark = [pytest.mark.deviceplugin, pytest.mark.overlapping(*SCENARIOS)]

# What the kubelet calls on a plugin that registers and then serves one stream; nothing after that.
ONE_STREAM = ["GetDevicePluginOptions", "ListAndWatch"]


@dataclass
class Window:
    """A plugin put in its scenario's state, and the watch that holds that state for upstream's minute."""

    plugin: DevicePluginHandle
    counts: NodeResource  # the plugin's resource on the node
    holds: Watch


@dataclass
class PodWindow(Window):
    """A Window whose state includes a running pod and the devices the kubelet allocated to it."""

    pod: PodHandle
    pod_devices: list[str]


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


@contextmanager
def _window(probe, what: str) -> Iterator[Watch]:
    """Upstream's minute of `probe` holding, in the background; cancelled with the scenario's fixture."""
    started = watch(probe, what=what, duration=timeouts.DEVICE_PLUGIN_UPDATE_WINDOW)
    try:
        yield started
    finally:
        started.cancel()


@contextmanager
def _pod_on_device_turned_unhealthy(
    cluster, kube, tmp_path_factory, module_pod_factory, prefix: str
) -> Iterator[tuple[DevicePluginHandle, NodeResource, PodHandle, str]]:
    """DF3's start, for both its halves: a plugin with one device, dev-0, a pod running on it, then dev-0 turned
    unhealthy (1/0 on the node); yields the plugin, its counts, the pod and the device it holds."""
    node = node_with_access(cluster)
    with serving_plugin(node, tmp_path_factory, devices=("dev-0",)) as plugin:
        counts = NodeResource(kube, node.name, plugin.config.resource_name)
        counts.wait_counts(1, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        pod = module_pod_factory(prefix, ["sleep", "86400"], resources={plugin.config.resource_name: 1})
        pod.wait_running()
        [held] = allocations(plugin, 1)
        plugin.set_health("dev-0", False)
        counts.wait_counts(1, 0)
        yield plugin, counts, pod, held


@pytest.fixture(scope="module")
def pod_on_unhealthy_device(cluster, kube, tmp_path_factory, module_pod_factory) -> Iterator[PodWindow]:
    """A pod running on dev-0, the plugin's only device, which then turned unhealthy; watched not to be evicted."""
    with _pod_on_device_turned_unhealthy(cluster, kube, tmp_path_factory, module_pod_factory, "user") as started:
        plugin, counts, user, held = started
        with _window(
            lambda: _running_unchanged(user), what=f"{user} to keep running on its unhealthy device"
        ) as not_evicted:
            yield PodWindow(plugin, counts, not_evicted, user, held)


@pytest.fixture(scope="module")
def unhealthy_device_of_deleted_pod(cluster, kube, tmp_path_factory, module_pod_factory) -> Iterator[Window]:
    """dev-0, the plugin's only device, turned unhealthy under a pod since deleted; watched to stay unallocatable."""
    with _pod_on_device_turned_unhealthy(cluster, kube, tmp_path_factory, module_pod_factory, "gone") as started:
        plugin, counts, gone, _ = started
        gone.force_delete()
        gone.wait_gone(timeouts.FORCE_DELETED_POD_GONE)

        def unallocatable() -> str | None:
            seen = counts.counts()
            return None if seen == (1, 0) else f"capacity/allocatable {seen}"

        with _window(
            unallocatable, what=f"{counts}, its only device unhealthy and its pod gone, to stay at 1/0"
        ) as still_unallocatable:
            yield Window(plugin, counts, still_unallocatable)


@pytest.fixture(scope="module")
def ended_listandwatch_stream(cluster, kube, tmp_path_factory) -> Iterator[Window]:
    """A plugin whose only ListAndWatch stream ended with an error; watched for the kubelet calling it again."""
    node = node_with_access(cluster)
    with serving_plugin(node, tmp_path_factory) as plugin:
        counts = NodeResource(kube, node.name, plugin.config.resource_name)
        counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        assert plugin.end_stream("fake stream failure") == 1, "the plugin had no open ListAndWatch stream to end"
        counts.wait_counts(2, 0)

        def stream_calls() -> str | None:
            methods = [c.method for c in plugin.calls()]
            return None if methods == ONE_STREAM else f"the kubelet called {methods}"

        with _window(
            stream_calls,
            what=f"no call to {plugin.config.resource_name} after its stream ended (no ListAndWatch retry)",
        ) as never_retried:
            yield Window(plugin, counts, never_retried)


@pytest.fixture(autouse=True)
def _attach_own_call_logs(request):
    """A failing test reports the call logs of its own scenarios' plugins."""
    for name in SCENARIOS:
        if name in request.fixturenames:
            plugin = request.getfixturevalue(name).plugin
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
def test_ended_stream_zeroes_allocatable_keeps_capacity_and_is_not_retried(ended_listandwatch_stream):
    """The stream ending counts as a disconnect (devices unhealthy, capacity kept for the grace period);
    for upstream's minute the kubelet calls the plugin no more (no ListAndWatch retry: #125501)."""
    ended = ended_listandwatch_stream
    ended.holds.holds()
    seen = ended.counts.counts()
    assert seen == (2, 0), f"{ended.counts}: capacity/allocatable {seen}, expected (2, 0) within the grace period"


@pytest.mark.scenario("DF3")
def test_device_turning_unhealthy_under_a_running_pod_does_not_evict_it(
    node, pod_factory, pod_on_unhealthy_device, unhealthy_device_of_deleted_pod
):
    """Upstream DF3: the pod keeps running on its unhealthy device for upstream's minute and keeps it; a
    device that turned unhealthy under a pod since deleted stays out of allocatable (capacity kept) for
    that minute, and a new pod asking for it is not admitted while it is unhealthy (the grace-period
    module holds the counts for the whole endpoint grace period and a minute more)."""
    running = pod_on_unhealthy_device
    running.holds.holds()
    resource = running.plugin.config.resource_name
    listed = sorted(running.pod.devices(resource))  # podresources lists a set
    assert listed == sorted(running.pod_devices), (
        f"podresources lists {listed}, the kubelet allocated {running.pod_devices}"
    )

    unhealthy_device_of_deleted_pod.holds.holds()
    plugin = unhealthy_device_of_deleted_pod.plugin
    late = pod_factory("late", ["sleep", "86400"], resources={plugin.config.resource_name: 1}, node_name=node.name)
    failed = late.wait_admission_failure()
    assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
    methods = [c.method for c in plugin.calls()]
    assert methods == [*ONE_STREAM, "Allocate"], f"an unhealthy device is never allocated; the plugin saw {methods}"
