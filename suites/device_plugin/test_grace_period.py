"""The 5-minute endpoint stop grace period (endpointStopGracePeriod): what the node reports while a
plugin is gone, and after. Each scenario has its own module fixture; the `overlapping` marker starts them
together before the module's first test, so the whole module waits the grace period once; each test then
checks its own scenario. Conditions that must hold for the whole period are background watches
(wait.core.watch) started by the scenario's fixture, collected by its test."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from device_conformance.fixtures.cluster import node_with_access
from device_conformance.fixtures.device_plugins import allocations, start_plugin, stop_plugins
from device_conformance.fixtures.reports import attach_on_failure

from device_conformance.framework import (
    ENDPOINT_STOP_GRACE_SECONDS,
    EXPIRED_ENDPOINT_OUT_OF_SYNC_LOG,
    EXPIRED_ENDPOINT_OUT_OF_SYNC_MESSAGE,
    LISTANDWATCH_ENDED_MESSAGE,
    Abort,
    DevicePluginHandle,
    NodeResource,
    Pending,
    Watch,
    podresources,
    pods,
    timeouts,
    until,
    watch,
)

# The scenarios' fixtures, in the order they start.
SCENARIOS = (
    "plugin_not_reregistered_after_kubelet_restart",
    "unhealthy_device_of_deleted_pod",
    "plugin_refused_at_first_listandwatch",
    "killed_plugin",
    "killed_plugin_to_respawn_after_expiry",
    "ended_listandwatch_stream",
)
pytestmark = [pytest.mark.deviceplugin, pytest.mark.slow, pytest.mark.disruptive, pytest.mark.overlapping(*SCENARIOS)]

# Count waits use DEVICE_COUNTS_AFTER_RESTART (the first registration's too); an expired endpoint may be
# reported up to ENDPOINT_EXPIRY_SLACK late.
EARLY_BY = 2  # stopTime is taken when the kubelet sees the stream break, a moment after our clock


@dataclass
class Scenario:
    plugin: DevicePluginHandle
    counts: NodeResource  # the plugin's resource on the node
    started: float  # when the plugin went away (or its device turned unhealthy), by our clock
    holds: Watch | None = None  # what must hold while the scenario runs, if anything
    log_mark: int = 0  # the kubelet log's size when the plugin went away (node.kubelet.log_since)

    @property
    def resource(self) -> str:
        return self.plugin.config.resource_name

    def expires_at(self) -> float:
        return self.started + ENDPOINT_STOP_GRACE_SECONDS


def _counts(kube, node, handle: DevicePluginHandle) -> NodeResource:
    return NodeResource(kube, node.name, handle.config.resource_name)


@contextmanager
def _registered(node, kube, tmp_path_factory, devices=("dev-0", "dev-1"), **overrides) -> Iterator[DevicePluginHandle]:
    """A fake plugin whose devices the node reports (unless it holds its registration), stopped afterwards."""
    handle = start_plugin(node, tmp_path_factory, devices=devices, **overrides)
    try:
        if not overrides.get("hold_registration"):
            _counts(kube, node, handle).wait_counts(len(devices), len(devices), timeouts.DEVICE_COUNTS_AFTER_RESTART)
        yield handle
    finally:
        stop_plugins([handle])


@contextmanager
def _stays(counts: NodeResource, wanted: tuple[int, int], duration: float) -> Iterator[Watch]:
    """A background watch that the counts stay at `wanted` for `duration`, cancelled afterwards."""

    def probe() -> str | None:
        seen = counts.counts()
        return None if seen == wanted else f"capacity/allocatable {seen}"

    started = watch(probe, what=f"{counts} to stay at capacity/allocatable {wanted}", duration=duration)
    try:
        yield started
    finally:
        started.cancel()


@pytest.fixture(scope="module")
def plugin_not_reregistered_after_kubelet_restart(cluster, kube, tmp_path_factory) -> Iterator[Scenario]:
    """A registered plugin that holds its registration across a kubelet restart, so it never registers again."""
    node = node_with_access(cluster)
    with _registered(node, kube, tmp_path_factory) as restarted:
        restarted.hold_registration(True)
        node.kubelet.restart()
        restart_time = time.monotonic()
        yield Scenario(restarted, _counts(kube, node, restarted), restart_time)


@pytest.fixture(scope="module")
def unhealthy_device_of_deleted_pod(cluster, kube, tmp_path_factory, module_pod_factory) -> Iterator[Scenario]:
    """Upstream DF3's long half: a live plugin's only device turned unhealthy under a pod since deleted,
    watched to stay out of allocatable (capacity kept) past the grace period."""
    node = node_with_access(cluster)
    with _registered(node, kube, tmp_path_factory, devices=("dev-0",)) as unhealthy:
        counts = _counts(kube, node, unhealthy)
        user = module_pod_factory("user", ["sleep", "86400"], resources={unhealthy.config.resource_name: 1})
        user.wait_running()
        allocations(unhealthy, 1)
        unhealthy.set_health("dev-0", False)
        counts.wait_counts(1, 0)
        user.force_delete()
        user.wait_gone(timeouts.FORCE_DELETED_POD_GONE)
        unhealthy_time = time.monotonic()
        with _stays(counts, (1, 0), timeouts.UNHEALTHY_DEVICE_UNALLOCATABLE_WINDOW) as holds:
            yield Scenario(unhealthy, counts, unhealthy_time, holds)


@pytest.fixture(scope="module")
def plugin_refused_at_first_listandwatch(cluster, kube, tmp_path_factory) -> Iterator[Scenario]:
    """A registered plugin whose first ListAndWatch fails, watched to stay at 0/0 past the grace period."""
    node = node_with_access(cluster)
    with _registered(node, kube, tmp_path_factory, hold_registration=True) as refused:
        refused.fail("ListAndWatch", "INTERNAL", "fake ListAndWatch failure")
        refused.hold_registration(False)
        refused.wait_for_call("ListAndWatch", done=True)
        refused_time = time.monotonic()
        counts = _counts(kube, node, refused)
        counts.wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)  # the key appears at 0/0
        with _stays(counts, (0, 0), ENDPOINT_STOP_GRACE_SECONDS + timeouts.ENDPOINT_EXPIRY_SLACK) as holds:
            yield Scenario(refused, counts, refused_time, holds)


@pytest.fixture(scope="module")
def killed_plugin(cluster, kube, tmp_path_factory) -> Iterator[Scenario]:
    """A registered plugin killed: its devices go unhealthy, capacity kept."""
    node = node_with_access(cluster)
    with _registered(node, kube, tmp_path_factory) as killed:
        killed.kill()
        killed_time = time.monotonic()
        counts = _counts(kube, node, killed)
        counts.wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        yield Scenario(killed, counts, killed_time)


@pytest.fixture(scope="module")
def killed_plugin_to_respawn_after_expiry(cluster, kube, tmp_path_factory) -> Iterator[Scenario]:
    """A registered plugin killed, with the kubelet log's size at the kill, for its test to respawn it."""
    node = node_with_access(cluster)
    with _registered(node, kube, tmp_path_factory) as revived:
        gone_mark = node.kubelet.log_mark()
        revived.kill()
        revived_time = time.monotonic()
        counts = _counts(kube, node, revived)
        counts.wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        yield Scenario(revived, counts, revived_time, log_mark=gone_mark)


@pytest.fixture(scope="module")
def ended_listandwatch_stream(cluster, kube, tmp_path_factory) -> Iterator[Scenario]:
    """A registered plugin whose ListAndWatch stream ended with an error: a disconnect, the plugin alive."""
    node = node_with_access(cluster)
    with _registered(node, kube, tmp_path_factory) as ended:
        ended.end_stream("fake stream failure")
        ended_time = time.monotonic()
        counts = _counts(kube, node, ended)
        counts.wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        yield Scenario(ended, counts, ended_time)


@pytest.fixture(autouse=True)
def _attach_own_call_logs(request):
    """A failing test reports the call log of its own scenario's plugin."""
    for name in SCENARIOS:
        if name in request.fixturenames:
            scenario = request.getfixturevalue(name)
            attach_on_failure(request.node, f"{name} plugin call log", scenario.plugin.report)


def _drops_after_grace(scenario, during, after=(0, 0)):
    """Counts hold at `during` until the grace period ends, then become `after`; returns when."""

    def probe():
        seen = scenario.counts.counts()
        if seen == after:
            return time.monotonic()
        if seen != during:
            raise Abort(f"counts became {seen} {time.monotonic() - scenario.started:.0f}s after the plugin left")
        return Pending(f"counts {seen}, {time.monotonic() - scenario.started:.0f}s after the plugin left")

    remaining = scenario.expires_at() - time.monotonic()
    dropped = until(
        probe,
        what=f"{scenario.resource} to go from {during} to {after} after the grace period",
        timeout=max(remaining, 0) + timeouts.ENDPOINT_EXPIRY_SLACK,
        interval=0.5,
    )
    held = dropped - scenario.started
    assert held >= ENDPOINT_STOP_GRACE_SECONDS - EARLY_BY, f"dropped after {held:.0f}s, before the grace period"
    return dropped


@pytest.mark.scenario("DF7")
def test_killed_plugin_keeps_capacity_for_the_grace_period_then_reports_zero(cluster, killed_plugin, pod_factory):
    """Upstream DF7 / kubernetes#60856: capacity = the devices, allocatable 0, for 5 minutes; then 0/0
    (the key itself stays on the node: #52510), and the device manager has forgotten the resource: a
    pod asking for it is refused by resource fit, not by the device manager."""
    scenario = killed_plugin
    _drops_after_grace(scenario, during=(2, 0))
    _refused_by_resource_fit(cluster, pod_factory, scenario)


@pytest.mark.scenario("DF6")
def test_ended_stream_is_never_retried_and_expires_like_a_dead_plugin(ended_listandwatch_stream):
    """Upstream DF6 (#125501): after the stream ends, 2/0 for the grace period, then 0/0, and the
    kubelet never called the plugin again."""
    scenario = ended_listandwatch_stream
    _drops_after_grace(scenario, during=(2, 0))
    assert [c.method for c in scenario.plugin.calls()] == ["GetDevicePluginOptions", "ListAndWatch"]


@pytest.mark.scenario("DF5")
def test_listandwatch_failing_at_once_leaves_an_empty_resource_and_no_retries(plugin_refused_at_first_listandwatch):
    """Upstream DF5: registered, but the first ListAndWatch fails: 0/0 throughout the grace period (and
    its slack), and the kubelet makes no call beyond GetDevicePluginOptions and that ListAndWatch."""
    scenario = plugin_refused_at_first_listandwatch
    scenario.holds.holds()  # 0/0 from the failed stream until past the grace period
    methods = [c.method for c in scenario.plugin.calls()]
    assert methods == ["GetDevicePluginOptions", "ListAndWatch"], f"the kubelet retried: it called {methods}"


@pytest.mark.scenario("DM-U7")
@pytest.mark.known_bug(EXPIRED_ENDPOINT_OUT_OF_SYNC_LOG)
def test_plugin_returning_after_expiry_gets_all_devices_back(
    cluster, killed_plugin_to_respawn_after_expiry, shows_known_bug
):
    """kubernetes#133702 (fixed in 1.35 by #133724): an expired endpoint must not leave its unhealthy
    device set behind; the plugin coming back reports N/N and podresources lists its devices. Before the
    fix the expiry deleted the endpoint between GetCapacity's two loops, and the kubelet logged
    "unhealthyDevices and endpoints became out of sync" for it (and for every other expiry)."""
    scenario = killed_plugin_to_respawn_after_expiry
    _drops_after_grace(scenario, during=(2, 0))
    # GetCapacity logs the line in the call that drops the counts, before node status shows 0/0.
    log = cluster.nodes[0].kubelet.log_since(scenario.log_mark)
    # The window must hold what the kubelet logged when this plugin was killed, else "no out-of-sync line"
    # would also pass on a log read that came back empty.
    ended = [
        line
        for line in log.splitlines()
        if LISTANDWATCH_ENDED_MESSAGE in line and f'resource="{scenario.resource}"' in line
    ]
    assert len(ended) == 1, (
        f"the kubelet log since the plugin was killed ({len(log.splitlines())} lines) has {len(ended)} lines "
        f"'{LISTANDWATCH_ENDED_MESSAGE}' for {scenario.resource}, expected exactly 1: {ended}"
    )
    with shows_known_bug(EXPIRED_ENDPOINT_OUT_OF_SYNC_LOG):
        out_of_sync = [line for line in log.splitlines() if EXPIRED_ENDPOINT_OUT_OF_SYNC_MESSAGE in line]
        assert out_of_sync == [], f"the endpoints' expiry logged {len(out_of_sync)}x: {out_of_sync[0]}"
    scenario.plugin.respawn()
    scenario.counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    socket = str(cluster.nodes[0].host_path(podresources.DEFAULT_SOCKET))
    allocatable = podresources.allocatable_resources(socket).device_ids.get(scenario.resource)
    assert sorted(allocatable or []) == ["dev-0", "dev-1"], allocatable


@pytest.mark.scenario("DM-U2")
def test_after_expiry_an_unregistered_resource_is_no_longer_a_device_plugin_resource(
    cluster, plugin_not_reregistered_after_kubelet_restart, pod_factory
):
    """After a restart the plugin never re-registered: 0/0 from the start; once the stopped endpoint
    expires the device manager forgets the resource, and a pod asking for it is refused by the
    resource-fit check (OutOf...) rather than by the device manager (UnexpectedAdmissionError)."""
    scenario = plugin_not_reregistered_after_kubelet_restart
    scenario.counts.wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    until(
        lambda: (
            True
            if time.monotonic() >= scenario.expires_at() + timeouts.ENDPOINT_EXPIRY_SLACK
            else Pending("grace period not over")
        ),
        what="the stopped endpoint of the restarted kubelet to expire",
        timeout=ENDPOINT_STOP_GRACE_SECONDS + 2 * timeouts.ENDPOINT_EXPIRY_SLACK,
        interval=1,
    )
    _refused_by_resource_fit(cluster, pod_factory, scenario)


@pytest.mark.scenario("DF3")
def test_unhealthy_device_stays_unallocatable_past_the_grace_period_after_its_pod_is_gone(
    cluster, unhealthy_device_of_deleted_pod, pod_factory
):
    """Upstream DF3, "when pod is deleted, nothing changes": the plugin is alive, its only device
    unhealthy, the pod that used it gone; capacity 1, allocatable 0 for the whole endpoint grace period
    and a minute more (UNHEALTHY_DEVICE_UNALLOCATABLE_WINDOW), and a pod asking for it is not admitted."""
    scenario = unhealthy_device_of_deleted_pod
    scenario.holds.holds()
    pod = pod_factory("late", ["sleep", "86400"], resources={scenario.resource: 1}, node_name=cluster.nodes[0].name)
    failed = pod.wait_admission_failure()
    assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
    allocations(scenario.plugin, 1)  # only the gone pod's: an unhealthy device is never allocated


def _refused_by_resource_fit(cluster, pod_factory, scenario):
    """A pod bound to the node asking for an expired resource fails the resource-fit check (OutOf...),
    not the device manager's admission (UnexpectedAdmissionError), and the plugin is never asked."""
    pod = pod_factory(
        "forgotten", ["sleep", "86400"], resources={scenario.resource: 1}, node_name=cluster.nodes[0].name
    )
    failed = pod.wait_admission_failure()
    assert failed.status.reason and failed.status.reason.startswith("OutOf"), (
        f"expected the resource-fit refusal OutOf{scenario.resource} of an expired resource, the kubelet gave: "
        f"{pods.summary(failed)}"
    )
    allocations(scenario.plugin)
