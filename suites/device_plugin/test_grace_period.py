"""The 5-minute endpoint stop grace period (endpointStopGracePeriod): what the node reports while a
plugin is gone, and after. All scenarios start together in one module fixture so the whole module
waits the grace period once; each test then checks its own scenario."""

import time
from dataclasses import dataclass

import pytest
from device_conformance.fixtures.device_plugins import start_plugin, stop_plugins
from device_conformance.fixtures.reports import attach_on_failure

from device_conformance import podresources
from device_conformance.expectations.deviceplugin import ENDPOINT_STOP_GRACE_SECONDS
from device_conformance.fakes.device_plugin import DevicePluginHandle
from device_conformance.kube import nodes, pods
from device_conformance.wait import kube as wait
from device_conformance.wait.core import Abort, Pending, until

pytestmark = [pytest.mark.deviceplugin, pytest.mark.slow, pytest.mark.disruptive]

COUNT_TIMEOUT = 30
# The kubelet drops an expired endpoint at its next node status update (every second here).
LATE_BY = 30
EARLY_BY = 2  # stopTime is taken when the kubelet sees the stream break, a moment after our clock


@dataclass
class Scenario:
    plugin: DevicePluginHandle
    started: float  # when the plugin went away, by our clock

    @property
    def resource(self) -> str:
        return self.plugin.config.resource_name

    def expires_at(self) -> float:
        return self.started + ENDPOINT_STOP_GRACE_SECONDS


@pytest.fixture(scope="module")
def scenarios(cluster, kube, tmp_path_factory):
    node = cluster.nodes[0] if cluster.nodes else pytest.skip("needs node access (local or kind provider)")
    handles: list[DevicePluginHandle] = []

    def registered(**overrides) -> DevicePluginHandle:
        handle = start_plugin(node, tmp_path_factory, **overrides)
        handles.append(handle)
        if overrides.get("hold_registration"):
            return handle
        wait.for_resource_counts(kube, node.name, handle.config.resource_name, 2, 2, timeout=COUNT_TIMEOUT)
        return handle

    try:
        # First the one that needs a kubelet restart, so the restart disturbs none of the others.
        restarted = registered()
        restarted.hold_registration(True)
        node.kubelet.restart()
        restart_time = time.monotonic()
        wait.for_node_ready(kube, node.name)

        killed, revived, ended = registered(), registered(), registered()
        refused = registered(hold_registration=True)
        refused.fail("ListAndWatch", "INTERNAL", "fake ListAndWatch failure")
        refused.hold_registration(False)
        refused.wait_for_call("ListAndWatch", done=True)
        refused_time = time.monotonic()
        killed.kill()
        killed_time = time.monotonic()
        revived.kill()
        revived_time = time.monotonic()
        ended.end_stream("fake stream failure")
        ended_time = time.monotonic()
        for gone in (killed, revived, ended):
            wait.for_resource_counts(kube, node.name, gone.config.resource_name, 2, 0, timeout=COUNT_TIMEOUT)
        yield {
            "restarted": Scenario(restarted, restart_time),
            "killed": Scenario(killed, killed_time),
            "revived": Scenario(revived, revived_time),
            "ended": Scenario(ended, ended_time),
            "refused": Scenario(refused, refused_time),
        }
    finally:
        stop_plugins(handles)


@pytest.fixture(autouse=True)
def _attach_call_logs(request, scenarios):
    for name, scenario in scenarios.items():
        attach_on_failure(request.node, f"{name} plugin call log", lambda s=scenario: s.plugin.report())


def _drops_after_grace(kube, node_name, scenario, during, after=(0, 0)):
    """Counts hold at `during` until the grace period ends, then become `after`; returns when."""

    def probe():
        seen = nodes.resource_counts(kube, node_name, scenario.resource)
        if seen == after:
            return time.monotonic()
        if seen != during:
            raise Abort(f"counts became {seen} {time.monotonic() - scenario.started:.0f}s after the plugin left")
        return Pending(f"counts {seen}, {time.monotonic() - scenario.started:.0f}s after the plugin left")

    remaining = scenario.expires_at() - time.monotonic()
    dropped = until(
        probe,
        what=f"{scenario.resource} to go from {during} to {after} after the grace period",
        timeout=max(remaining, 0) + LATE_BY,
        interval=0.5,
    )
    held = dropped - scenario.started
    assert held >= ENDPOINT_STOP_GRACE_SECONDS - EARLY_BY, f"dropped after {held:.0f}s, before the grace period"
    return dropped


def test_killed_plugin_keeps_capacity_for_the_grace_period_then_reports_zero(kube, cluster, scenarios):
    """Upstream DF7 / bug 1 (#60856): capacity = the devices, allocatable 0, for 5 minutes; then 0/0
    (the key itself stays on the node: #52510)."""
    node_name = cluster.nodes[0].name
    _drops_after_grace(kube, node_name, scenarios["killed"], during=(2, 0))
    assert nodes.resource_counts(kube, node_name, scenarios["killed"].resource) == (0, 0)


def test_ended_stream_is_never_retried_and_expires_like_a_dead_plugin(kube, cluster, scenarios):
    """Upstream DF6 (#125501): after the stream ends, 2/0 for the grace period, then 0/0, and the
    kubelet never called the plugin again."""
    scenario = scenarios["ended"]
    _drops_after_grace(kube, cluster.nodes[0].name, scenario, during=(2, 0))
    assert [c.method for c in scenario.plugin.calls()] == ["GetDevicePluginOptions", "ListAndWatch"]


def test_listandwatch_failing_at_once_leaves_an_empty_resource_and_no_retries(kube, cluster, scenarios):
    """Upstream DF5: registered, but the first ListAndWatch fails: 0/0, and over the whole grace
    period the kubelet makes no call beyond GetDevicePluginOptions and that ListAndWatch."""
    scenario = scenarios["refused"]
    node_name = cluster.nodes[0].name
    wait.for_resource_counts(kube, node_name, scenario.resource, 0, 0, timeout=COUNT_TIMEOUT)
    until(
        lambda: True if time.monotonic() >= scenario.expires_at() else Pending("grace period not over"),
        what="the grace period of the refused stream to pass",
        timeout=ENDPOINT_STOP_GRACE_SECONDS + LATE_BY,
        interval=1,
    )
    assert [c.method for c in scenario.plugin.calls()] == ["GetDevicePluginOptions", "ListAndWatch"]
    assert nodes.resource_counts(kube, node_name, scenario.resource) == (0, 0)


def test_plugin_returning_after_expiry_gets_all_devices_back(kube, cluster, scenarios):
    """Bug 10 (#133702, fixed in 1.35 by #133724): an expired endpoint must not leave its unhealthy
    device set behind; the plugin coming back reports N/N and podresources lists its devices."""
    scenario = scenarios["revived"]
    node = cluster.nodes[0]
    _drops_after_grace(kube, node.name, scenario, during=(2, 0))
    scenario.plugin.respawn()
    wait.for_resource_counts(kube, node.name, scenario.resource, 2, 2, timeout=COUNT_TIMEOUT)
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    allocatable = podresources.allocatable_resources(socket).device_ids.get(scenario.resource)
    assert sorted(allocatable or []) == ["dev-0", "dev-1"], allocatable


def test_after_expiry_an_unregistered_resource_is_no_longer_a_device_plugin_resource(
    kube, cluster, scenarios, namespace, make_pod
):
    """After a restart the plugin never re-registered: 0/0 from the start; once the stopped endpoint
    expires the device manager forgets the resource, and a pod asking for it is refused by the
    resource-fit check (OutOf...) rather than by the device manager (UnexpectedAdmissionError)."""
    scenario = scenarios["restarted"]
    node_name = cluster.nodes[0].name
    wait.for_resource_counts(kube, node_name, scenario.resource, 0, 0, timeout=COUNT_TIMEOUT)
    until(
        lambda: True if time.monotonic() >= scenario.expires_at() + LATE_BY else Pending("grace period not over"),
        what="the stopped endpoint of the restarted kubelet to expire",
        timeout=ENDPOINT_STOP_GRACE_SECONDS + 2 * LATE_BY,
        interval=1,
    )
    pod = make_pod("forgotten", ["sleep", "86400"], resources={scenario.resource: 1}, node_name=node_name)
    failed = wait.for_admission_failure(kube, namespace, pod.metadata.name, timeout=COUNT_TIMEOUT)
    assert failed.status.reason and failed.status.reason.startswith("OutOf"), pods.summary(failed)
    assert scenario.plugin.calls("Allocate") == []
