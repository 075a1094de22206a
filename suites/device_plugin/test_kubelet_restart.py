"""Restarts: of the kubelet (device pods keep their devices, the plugin re-registers) and of the plugin.

"Keeps its devices" means: podresources lists exactly the IDs the kubelet gave the plugin's one Allocate
call for the container (`allocations`), never merely the same list as before (which may be empty).
The Succeeded-pod scenario (DP6) holds for upstream's minute in the background: the `overlapping` marker starts
its module fixture before the module's first test, and the minute runs while the module's other tests do."""

import time
from dataclasses import dataclass

import pytest
from device_conformance.fixtures.device_plugins import allocations, start_plugin, stop_plugins
from device_conformance.fixtures.reports import attach_on_failure
from kubernetes.client import ApiException

from device_conformance.framework import (
    ADMISSION_ERROR,
    COMPLETED_INIT_CONTAINER_READMITTED_ON_KUBELET_RESTART,
    NO_HEALTHY_DEVICES,
    RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART,
    SUCCEEDED_POD_READMITTED,
    DevicePluginHandle,
    NodeResource,
    Pending,
    PodHandle,
    Watch,
    assert_lists,
    keeps_running,
    podresources,
    pods,
    readmission_line,
    timeouts,
    until,
    wait,
    wait_podresources,
    watch,
)

pytestmark = [
    pytest.mark.deviceplugin,
    pytest.mark.overlapping("succeeded_pod_across_restart_without_its_plugin"),
]


def _restart_and_reregister(node, plugin, counts):
    """Restart the kubelet; the plugin registers a second time and the node offers both devices again."""
    node.kubelet.restart()
    plugin.wait_for_registration(count=2, timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)


@dataclass
class SucceededPodAcrossRestart:
    """DP6's state: the Succeeded pod, its plugin (stopped), and the window in which the pod must stay Succeeded."""

    plugin: DevicePluginHandle
    pod: PodHandle
    stays_succeeded: Watch


@pytest.fixture(scope="module")
def succeeded_pod_across_restart_without_its_plugin(cluster, kube, tmp_path_factory, module_pod_factory):
    """Upstream DP6: a Succeeded pod kept by a finalizer, its plugin gone, the kubelet restarted; then a
    background watch that it stays Succeeded for SUCCEEDED_POD_NOT_READMITTED_WINDOW while the module's other
    tests (more restarts) run."""
    node = cluster.nodes[0] if cluster.nodes else pytest.skip("needs node access (local or kind provider)")
    plugin = start_plugin(node, tmp_path_factory)
    stays_succeeded = None
    try:
        resource = plugin.config.resource_name
        counts = NodeResource(kube, node.name, resource)
        counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        pod = module_pod_factory(
            "done", ["true"], resources={resource: 1}, finalizers=["device-conformance.example.com/keep"]
        )
        pod.wait_phase("Succeeded")
        allocations(plugin, 1)
        plugin.stop()
        counts.wait_counts(2, 0)
        node.kubelet.restart()
        counts.wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)

        def not_succeeded() -> str | None:
            try:
                current = pod.read()
            except ApiException as exc:  # a watch takes exceptions for API hiccups: gone must be a verdict
                if exc.status == 404:
                    return f"{pod} is gone"
                raise
            return None if current.status.phase == "Succeeded" else pods.summary(current)

        stays_succeeded = watch(
            not_succeeded,
            what=f"{pod} to stay Succeeded after the kubelet restart",
            duration=timeouts.SUCCEEDED_POD_NOT_READMITTED_WINDOW,
        )
        yield SucceededPodAcrossRestart(plugin, pod, stays_succeeded)
    finally:
        if stays_succeeded is not None:
            stays_succeeded.cancel()
        stop_plugins([plugin])


@pytest.mark.disruptive
@pytest.mark.scenario("DP4")
def test_kubelet_restart_keeps_the_device_pod_and_plugin_reregisters(
    node, pod_factory, node_resource, registered_plugin
):
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory("keep", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [held] = allocations(plugin, 1)
    assert_lists(pod, resource, held, "before the restart")

    node.kubelet.restart()
    plugin.wait_for_registration(count=2, timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    node_resource(resource).wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)

    pod.wait_running()
    keeps_running(pod, duration=2)
    assert_lists(pod, resource, held, "after the kubelet restart")
    allocations(plugin, 1)  # the running container is not allocated again


@pytest.mark.scenario("DM-U7")
def test_killed_plugin_zeroes_allocatable_and_respawn_restores_it(pod_factory, node_resource, registered_plugin):
    """SIGKILL: the kubelet sees the stream break, devices go unhealthy (capacity kept for the grace
    period); the same plugin started again re-registers, allocatable comes back, and the new process
    serves the next pod's Allocate."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    first_pid = plugin.pid
    plugin.kill()
    counts.wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_PLUGIN_KILL)
    plugin.respawn()
    again = plugin.wait_for_registration(count=2)
    assert again.pid == plugin.pid != first_pid, f"registration #2 came from pid {again.pid}, not the respawned one"
    counts.wait_counts(2, 2)
    streams = [(c.pid, c.method) for c in plugin.calls() if c.method != "Allocate"]
    expected = [(first_pid, "GetDevicePluginOptions"), (first_pid, "ListAndWatch")]
    expected += [(plugin.pid, "GetDevicePluginOptions"), (plugin.pid, "ListAndWatch")]
    assert streams == expected, f"expected one registration and one stream per process, the plugin saw {streams}"
    pod = pod_factory("after", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [granted] = allocations(plugin, 1)
    assert_lists(pod, resource, granted, "a pod of the respawned plugin")


@pytest.mark.disruptive
@pytest.mark.scenario("DM-U2")
def test_plugin_not_reregistering_leaves_zero_devices_and_new_pods_fail_admission(
    node, pod_factory, node_resource, registered_plugin
):
    """After a restart the kubelet knows the resource from its checkpoint as a stopped endpoint with no
    devices: capacity and allocatable are 0 at once, a pod bound to the node fails admission instead of
    running without devices, and the plugin's late registration brings everything back (kubernetes#60856)."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    plugin.hold_registration(True)
    node.kubelet.restart()
    counts.wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)

    pod = pod_factory("early", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    failed = pod.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert NO_HEALTHY_DEVICES in failed.status.message and resource in failed.status.message, failed.status.message
    allocations(plugin)  # none: the plugin is not registered

    plugin.hold_registration(False)
    plugin.wait_for_registration(count=2, timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    late = pod_factory("late", ["sleep", "86400"], resources={resource: 1})
    late.wait_running()
    [granted] = allocations(plugin, 1)
    assert_lists(late, resource, granted, "after the late registration")


@pytest.mark.disruptive
@pytest.mark.scenario("DP9")
def test_pod_force_deleted_while_kubelet_is_down_is_cleaned_up_and_frees_its_device(
    kube, node, pod_factory, registered_plugin
):
    """Upstream DP9: the kubelet finds the orphan at start, removes its sandbox, stops reporting it in
    podresources, and its device can be allocated again."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory("orphan", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [held] = allocations(plugin, 1)
    assert_lists(pod, resource, held, "before the kubelet stopped")

    with node.kubelet.stopped():
        pod.force_delete()
        pod.wait_gone(timeouts.FORCE_DELETED_POD_GONE)
        kubelet_started = time.monotonic()  # stopped() starts the kubelet as the block ends
    wait.for_node_ready(kube, node.name)

    # This node's socket: with the pod gone from the API its handle cannot look up the node it ran on.
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    wait_podresources.for_unlisted_pod(socket, pod.namespace, pod.name)

    def sandbox_removed():
        left = [s for s in node.pod_sandboxes() if s.uid == pod.uid]
        return True if not left else Pending(f"sandboxes of the orphan: {left}")

    # Only the kubelet's container GC removes it, one period after its pass at start (core/timeouts.py): the
    # bound counts from the kubelet's start, not from here.
    until(
        sandbox_removed,
        what=f"the kubelet to remove the sandbox of force-deleted {pod.name} "
        f"within {timeouts.ORPHAN_SANDBOX_REMOVED}s of its start",
        timeout=max(0.0, timeouts.ORPHAN_SANDBOX_REMOVED - (time.monotonic() - kubelet_started)),
    )
    both = pod_factory("both", ["sleep", "86400"], resources={resource: 2})
    both.wait_running()
    _, granted = allocations(plugin, 1, 2)
    assert sorted(granted) == ["dev-0", "dev-1"], f"the orphan's device was not freed: the kubelet allocated {granted}"
    assert_lists(both, resource, granted, "the pod after the orphan")


@pytest.mark.disruptive
@pytest.mark.scenario("DP4")
def test_pod_with_init_and_app_devices_survives_kubelet_restart(node, pod_factory, node_resource, registered_plugin):
    """Init container and app container both hold a device; a plain kubelet restart, the plugin registering
    again at once, must keep the pod (#124345). With the plugin away it is kubernetes#138446 (next test)."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    init = pods.container_spec("init", ["true"], resources={resource: 1})
    pod = pod_factory("initapp", ["sleep", "86400"], resources={resource: 1}, init_containers=[init])
    pod.wait_running()
    _, held = allocations(plugin, 1, 1)  # the init container's, then main's
    assert_lists(pod, resource, held, "before the restart")

    _restart_and_reregister(node, plugin, node_resource(resource))

    keeps_running(pod)
    assert_lists(pod, resource, held, "after the kubelet restart")
    allocations(plugin, 1, 1)


# How the plugin is away when the kubelet restarts, as in kubernetes#138446's reports: its registration held
# back until the kubelet has taken the pod through admission again (readmission_line), or its process stopped
# before the restart and started again afterwards. The report's third variant, a plugin registering some seconds
# after the restart, is the first one: letting it register any earlier would race HandlePodAdditions right after
# "SyncLoop ADD" (pkg/kubelet/kubelet.go syncLoopIteration), and the verdict would depend on which came first.
PLUGIN_AWAY = ("held-back", "stopped")


@pytest.mark.disruptive
@pytest.mark.known_bug(COMPLETED_INIT_CONTAINER_READMITTED_ON_KUBELET_RESTART)
@pytest.mark.parametrize("away", PLUGIN_AWAY)
def test_pod_with_a_completed_init_device_container_survives_kubelet_restart_while_its_plugin_is_away(
    node, pod_factory, node_resource, registered_plugin, shows_known_bug, away
):
    """kubernetes#138446: the init container held a device and completed, the app container runs; a kubelet
    restart while the plugin is away must leave the pod running. devicesToAllocate returns early only for a
    container found running, so the completed init container reaches the registration and health checks that
    sit before `needed == 0` (#109595) and the whole pod is failed with UnexpectedAdmissionError."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    init = pods.container_spec("init", ["true"], resources={resource: 1})
    pod = pod_factory("initaway", ["sleep", "86400"], resources={resource: 1}, init_containers=[init])
    pod.wait_running()
    _, held = allocations(plugin, 1, 1)  # the init container's, then main's
    assert_lists(pod, resource, held, "before the restart")

    if away == "stopped":
        plugin.stop()
        counts.wait_counts(2, 0)
    else:
        plugin.hold_registration(True)
    mark = node.kubelet.log_mark()
    node.kubelet.restart()
    counts.wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    readmission_line(node, pod, mark)

    def changed(current):
        if current.metadata.uid != pod.uid:
            return f"a new pod {current.metadata.uid}"
        main = next((s for s in current.status.container_statuses or [] if s.name == "main"), None)
        if current.status.phase == "Running" and main is not None and main.state.running and not main.restart_count:
            return None
        # A rejected pod can show phase Running without container statuses until its containers are stopped:
        # the kubelet's admission event says why.
        return f"{pods.summary(current)}; admission events: {[e for e in pod.events() if ADMISSION_ERROR in e]}"

    with shows_known_bug(COMPLETED_INIT_CONTAINER_READMITTED_ON_KUBELET_RESTART):  # Failed, UnexpectedAdmission
        pod.stays(changed, what="to keep running, its init container completed", duration=5)
        assert_lists(pod, resource, held, f"after the kubelet restart, plugin {away}")

    if away == "stopped":
        plugin.respawn()
    else:
        plugin.hold_registration(False)
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    allocations(plugin, 1, 1)  # none again: a pod left running, or one failed before any Allocate


@pytest.mark.disruptive
@pytest.mark.scenario("DP11", "DM3")
def test_reboot_with_plugin_held_back_fails_the_pod_instead_of_running_it_without_devices(
    kube, node, pod_factory, node_resource, registered_plugin
):
    """Upstream DP11/DM3 (kubernetes#109595 fixed by #116376): after a reboot (all sandboxes gone) the pod
    must be re-admitted; with the plugin not registered it fails admission rather than run without its
    device, and the node offers 0 devices."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory("rebooted", ["sleep", "86400"], resources={resource: 2}, restart_policy="Always")
    pod.wait_running()
    [held] = allocations(plugin, 2)
    assert_lists(pod, resource, held, "before the reboot")

    plugin.hold_registration(True)
    removed = node.simulate_reboot()
    assert removed >= 1, f"the reboot simulation removed {removed} pod sandboxes, the device pod's at least"
    wait.for_node_ready(kube, node.name)
    failed = pod.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert NO_HEALTHY_DEVICES in failed.status.message, failed.status.message
    node_resource(resource).wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    allocations(plugin, 2)  # only the first admission's


@pytest.mark.disruptive
def test_running_pod_survives_kubelet_restart_while_its_plugin_is_away(
    node, pod_factory, node_resource, registered_plugin
):
    """kubernetes#118559 (fixed by #118635): a plain kubelet restart while the plugin is not registered
    must not re-admit (and fail) the running device pod; it is found running and left alone."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    pod = pod_factory("steady", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [held] = allocations(plugin, 1)
    assert_lists(pod, resource, held, "before the restart")

    plugin.hold_registration(True)
    node.kubelet.restart()
    counts.wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    keeps_running(pod)
    assert_lists(pod, resource, held, "after the restart, plugin not registered")

    plugin.hold_registration(False)
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    keeps_running(pod, duration=2)
    allocations(plugin, 1)


# Containers of the restarted-container test: each holds one device and exits once (its marker on the pod's
# emptyDir says it already has), so each leaves an exited and a running container behind. Before
# kubernetes#135485 the kubelet picked one of the two at random (map order) per container after a restart, so
# with 12 the pod survives on an affected kubelet with probability 2**-12 only (the strict xfail then goes red;
# with 8, 1 in 256 runs of each affected matrix row).
RESTARTED_CONTAINERS = 12


def _exits_once(name: str, resource: str) -> dict:
    marker = f"/markers/{name}"
    command = ["sh", "-c", f"if [ -e {marker} ]; then exec sleep 86400; fi; touch {marker}; exit 1"]
    mounts = [{"name": "markers", "mountPath": "/markers"}]
    return pods.container_spec(name, command, resources={resource: 1}, volume_mounts=mounts)


def _restarted_once_and_running(current) -> str | None:
    """None when every container of the pod is running after exactly one restart (else what it is)."""
    statuses = {s.name: s for s in current.status.container_statuses or []}
    wanted = [f"c{i}" for i in range(RESTARTED_CONTAINERS)]
    ok = current.status.phase == "Running" and all(
        name in statuses and statuses[name].state.running and statuses[name].restart_count == 1 for name in wanted
    )
    return None if ok else pods.summary(current)


@pytest.mark.disruptive
@pytest.mark.known_bug(RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART)
def test_pod_with_restarted_containers_survives_kubelet_restart_while_its_plugin_is_away(
    node, pod_factory, register_plugin, node_resource, shows_known_bug
):
    """kubernetes#135485: containers that restarted once before a kubelet restart (an exited and a running
    container each) are found running, so the pod is not re-admitted and failed while its plugin is away."""
    devices = [f"dev-{i}" for i in range(RESTARTED_CONTAINERS)]
    plugin = register_plugin(devices=devices)
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    containers = [_exits_once(f"c{i}", resource) for i in range(RESTARTED_CONTAINERS)]
    pod = pod_factory(
        "restarted",
        ["sleep", "86400"],
        restart_policy="Always",
        containers=containers,
        volumes=[{"name": "markers", "emptyDir": {}}],
    )

    def settled():
        current = pod.read()
        seen = _restarted_once_and_running(current)
        return current if seen is None else Pending(seen)

    until(settled, what=f"every container of {pod} to run after one restart", timeout=timeouts.POD_START * 3)
    held = allocations(plugin, *[1] * RESTARTED_CONTAINERS)  # once per container, not again on its restart
    granted = sorted(device for ids in held for device in ids)
    assert granted == sorted(devices), f"the kubelet allocated {held}, one each of {devices}"

    plugin.hold_registration(True)
    node.kubelet.restart()
    counts.wait_counts(0, 0, timeouts.DEVICE_COUNTS_AFTER_RESTART)

    def changed(current):
        if current.metadata.uid != pod.uid:
            return f"a new pod {current.metadata.uid}"
        seen = _restarted_once_and_running(current)
        if seen is None:
            return None
        # A rejected pod shows phase Running without container statuses until its containers are stopped: the
        # kubelet's event says why.
        return f"{seen}; admission events: {[e for e in pod.events() if ADMISSION_ERROR in e]}"

    with shows_known_bug(RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART):  # before: Failed, UnexpectedAdmission
        pod.stays(changed, what="to keep running, every container restarted once", duration=10)

    plugin.hold_registration(False)
    counts.wait_counts(RESTARTED_CONTAINERS, RESTARTED_CONTAINERS, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    allocations(plugin, *[1] * RESTARTED_CONTAINERS)  # none again: running containers, or a pod that failed first


@pytest.mark.disruptive
@pytest.mark.scenario("DP8")
def test_assignments_survive_kubelet_restart_then_plugin_restart(node, pod_factory, node_resource, registered_plugin):
    """Upstream DP8: restart the kubelet, then kill and restart the plugin; after each step the pod is
    the same, Running and Ready, and podresources reports the same device."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    pod = pod_factory("durable", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [held] = allocations(plugin, 1)
    assert_lists(pod, resource, held, "before the restarts")

    _restart_and_reregister(node, plugin, counts)
    keeps_running(pod, duration=2)
    assert_lists(pod, resource, held, "after the kubelet restart")

    plugin.kill()
    counts.wait_counts(2, 0)
    plugin.respawn()
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    keeps_running(pod, duration=2)
    assert_lists(pod, resource, held, "after the plugin restart")
    allocations(plugin, 1)


@pytest.mark.disruptive
@pytest.mark.scenario("DP6")
@pytest.mark.known_bug(SUCCEEDED_POD_READMITTED)
def test_succeeded_pod_is_not_readmitted_after_restart_without_its_plugin(
    request, succeeded_pod_across_restart_without_its_plugin, shows_known_bug
):
    """A Succeeded pod kept by a finalizer stays Succeeded for upstream's minute after a kubelet restart
    while its plugin is gone; it must not be re-admitted and failed (upstream DP6, #126341). The state is
    made and the minute started by its module fixture, before the module's first test."""
    scenario = succeeded_pod_across_restart_without_its_plugin
    attach_on_failure(request.node, "fake device plugin of the Succeeded pod, call log", scenario.plugin.report)
    with shows_known_bug(SUCCEEDED_POD_READMITTED):  # before the fix: Failed, UnexpectedAdmissionError
        scenario.stays_succeeded.holds()
    allocations(scenario.plugin, 1)  # the kubelet asked the plugin for the pod's device once, before it ran
