"""Restarts: of the kubelet (device pods keep their devices, the plugin re-registers) and of the plugin."""

import pytest

from device_conformance import podresources
from device_conformance.expectations.deviceplugin import SUCCEEDED_POD_READMITTED
from device_conformance.fakes.device_plugin import AllocateConfig
from device_conformance.kube import nodes, pods
from device_conformance.wait import kube as wait
from device_conformance.wait import podresources as wait_podresources
from device_conformance.wait.core import Pending, stays, until

pytestmark = pytest.mark.deviceplugin

COUNT_TIMEOUT = 15
RESTART_COUNT_TIMEOUT = 30
POD_TIMEOUT = 60
ADMISSION_ERROR = "UnexpectedAdmissionError"
NO_HEALTHY_DEVICES = "no healthy devices present; cannot allocate unhealthy devices"


def _devices_of(node, namespace, name, resource, container="main"):
    return wait_podresources.device_ids(podresources_socket(node), namespace, name, resource, container)


def podresources_socket(node):
    return str(node.host_path(podresources.DEFAULT_SOCKET))


def _restart_and_reregister(kube, node, plugin, resource):
    """Restart the kubelet; the plugin registers a second time and the node offers both devices again."""
    node.kubelet.restart()
    plugin.wait_for_registration(count=2, timeout=RESTART_COUNT_TIMEOUT)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=RESTART_COUNT_TIMEOUT)


def _keeps_running(kube, namespace, name, before, duration=5):
    def unchanged():
        current = pods.read(kube, namespace, name)
        status = current.status.container_statuses[0]
        if current.metadata.uid != before.metadata.uid or current.status.phase != "Running" or status.restart_count:
            return pods.summary(current)
        return None

    stays(unchanged, what=f"pod {namespace}/{name} to keep running unrestarted", duration=duration)


@pytest.mark.disruptive
def test_kubelet_restart_keeps_the_device_pod_and_plugin_reregisters(kube, node, namespace, make_pod, device_plugin):
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("keep", ["sleep", "86400"], resources={resource: 1})
    before = wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    devices = _devices_of(node, namespace, pod.metadata.name, resource)
    assert devices and len(devices) == 1

    node.kubelet.restart()
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


@pytest.mark.disruptive
def test_plugin_not_reregistering_leaves_zero_devices_and_new_pods_fail_admission(
    kube, node, namespace, make_pod, device_plugin
):
    """After a restart the kubelet knows the resource from its checkpoint as a stopped endpoint with no
    devices: capacity and allocatable are 0 at once, a pod bound to the node fails admission instead of
    running without devices, and the plugin's late registration brings everything back (bug 1, #60856)."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    plugin.hold_registration(True)
    node.kubelet.restart()
    wait.for_node_ready(kube, node.name)
    wait.for_resource_counts(kube, node.name, resource, 0, 0, timeout=RESTART_COUNT_TIMEOUT)

    pod = make_pod("early", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    failed = wait.for_admission_failure(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert NO_HEALTHY_DEVICES in failed.status.message and resource in failed.status.message, failed.status.message
    assert plugin.calls("Allocate") == []

    plugin.hold_registration(False)
    plugin.wait_for_registration(count=2, timeout=RESTART_COUNT_TIMEOUT)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=RESTART_COUNT_TIMEOUT)
    late = make_pod("late", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, late.metadata.name, timeout=POD_TIMEOUT)


@pytest.mark.disruptive
def test_succeeded_pod_is_not_readmitted_after_restart_without_its_plugin(
    kube, node, namespace, make_pod, device_plugin, known_bug
):
    """A Succeeded pod kept by a finalizer stays Succeeded across a kubelet restart while its plugin is
    gone; it must not be re-admitted and failed (upstream DP6, #126341)."""
    known_bug(SUCCEEDED_POD_READMITTED)
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("done", ["true"], resources={resource: 1}, finalizers=["device-conformance.example.com/keep"])
    name = pod.metadata.name
    wait.for_pod_phase(kube, namespace, name, "Succeeded", timeout=POD_TIMEOUT)

    plugin.stop()
    wait.for_resource_counts(kube, node.name, resource, 2, 0, timeout=COUNT_TIMEOUT)
    node.kubelet.restart()
    wait.for_node_ready(kube, node.name)
    wait.for_resource_counts(kube, node.name, resource, 0, 0, timeout=RESTART_COUNT_TIMEOUT)

    def still_succeeded():
        current = pods.read(kube, namespace, name)
        return None if current.status.phase == "Succeeded" else pods.summary(current)

    stays(still_succeeded, what=f"pod {namespace}/{name} to stay Succeeded", duration=10)


@pytest.mark.disruptive
def test_pod_force_deleted_while_kubelet_is_down_is_cleaned_up_and_frees_its_device(
    kube, node, namespace, make_pod, device_plugin
):
    """Upstream DP9: the kubelet finds the orphan at start, removes its sandbox, stops reporting it in
    podresources, and its device can be allocated again."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("orphan", ["sleep", "86400"], resources={resource: 1})
    name = pod.metadata.name
    running = wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    assert len(_devices_of(node, namespace, name, resource)) == 1

    node.kubelet.stop()
    pods.force_delete(kube, namespace, name)
    wait.for_pod_gone(kube, namespace, name, timeout=30)
    node.kubelet.start()
    wait.for_node_ready(kube, node.name)

    wait_podresources.for_unlisted_pod(podresources_socket(node), namespace, name)

    def sandbox_removed():
        left = [s for s in node.pod_sandboxes() if s.uid == running.metadata.uid]
        return True if not left else Pending(f"sandboxes of the orphan: {left}")

    until(sandbox_removed, what=f"the kubelet to remove the sandbox of force-deleted {name}", timeout=POD_TIMEOUT)
    both = make_pod("both", ["sleep", "86400"], resources={resource: 2})
    wait.for_pod_running_ready(kube, namespace, both.metadata.name, timeout=POD_TIMEOUT)
    assert sorted(_devices_of(node, namespace, both.metadata.name, resource)) == ["dev-0", "dev-1"]


@pytest.mark.disruptive
def test_pod_with_init_and_app_devices_survives_kubelet_restart(kube, node, namespace, make_pod, device_plugin):
    """Init container and app container both hold a device; a plain kubelet restart must keep the pod
    (bug 7: #124345, recurrence #138446 "container not present in the initial running set")."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    init = pods.container_spec("init", ["true"], resources={resource: 1})
    pod = make_pod("initapp", ["sleep", "86400"], resources={resource: 1}, init_containers=[init])
    name = pod.metadata.name
    before = wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    devices = _devices_of(node, namespace, name, resource)

    _restart_and_reregister(kube, node, plugin, resource)

    _keeps_running(kube, namespace, name, before)
    assert _devices_of(node, namespace, name, resource) == devices


@pytest.mark.disruptive
def test_reboot_with_plugin_held_back_fails_the_pod_instead_of_running_it_without_devices(
    kube, node, namespace, make_pod, device_plugin
):
    """Upstream DP11/DM3 (bug 4, #109595 fixed by #116376): after a reboot (all sandboxes gone) the pod
    must be re-admitted; with the plugin not registered it fails admission rather than run without its
    device, and the node offers 0 devices."""
    plugin = device_plugin(devices=("dev-0", "dev-1"), allocate=AllocateConfig(envs={"DC_DEVICES": "{ids}"}))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("rebooted", ["sleep", "86400"], resources={resource: 2}, restart_policy="Always")
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)

    plugin.hold_registration(True)
    assert node.simulate_reboot() >= 1
    wait.for_node_ready(kube, node.name)
    failed = wait.for_admission_failure(kube, namespace, name, timeout=POD_TIMEOUT)
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert NO_HEALTHY_DEVICES in failed.status.message, failed.status.message
    wait.for_resource_counts(kube, node.name, resource, 0, 0, timeout=RESTART_COUNT_TIMEOUT)
    assert len(plugin.calls("Allocate")) == 1


@pytest.mark.disruptive
def test_running_pod_survives_kubelet_restart_while_its_plugin_is_away(kube, node, namespace, make_pod, device_plugin):
    """Bug 5 (#118559, fixed by #118635): a plain kubelet restart while the plugin is not registered
    must not re-admit (and fail) the running device pod; it is found running and left alone."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("steady", ["sleep", "86400"], resources={resource: 1})
    name = pod.metadata.name
    before = wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    devices = _devices_of(node, namespace, name, resource)

    plugin.hold_registration(True)
    node.kubelet.restart()
    wait.for_node_ready(kube, node.name)
    wait.for_resource_counts(kube, node.name, resource, 0, 0, timeout=RESTART_COUNT_TIMEOUT)
    _keeps_running(kube, namespace, name, before)
    assert _devices_of(node, namespace, name, resource) == devices

    plugin.hold_registration(False)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=RESTART_COUNT_TIMEOUT)
    _keeps_running(kube, namespace, name, before, duration=2)
    assert len(plugin.calls("Allocate")) == 1


@pytest.mark.disruptive
def test_assignments_survive_kubelet_restart_then_plugin_restart(kube, node, namespace, make_pod, device_plugin):
    """Upstream DP8: restart the kubelet, then kill and restart the plugin; after each step the pod is
    the same, Running and Ready, and podresources reports the same device."""
    plugin = device_plugin(devices=("dev-0", "dev-1"))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("durable", ["sleep", "86400"], resources={resource: 1})
    name = pod.metadata.name
    before = wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    devices = _devices_of(node, namespace, name, resource)

    _restart_and_reregister(kube, node, plugin, resource)
    _keeps_running(kube, namespace, name, before, duration=2)
    assert _devices_of(node, namespace, name, resource) == devices

    plugin.kill()
    wait.for_resource_counts(kube, node.name, resource, 2, 0, timeout=COUNT_TIMEOUT)
    plugin.respawn()
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=RESTART_COUNT_TIMEOUT)
    _keeps_running(kube, namespace, name, before, duration=2)
    assert _devices_of(node, namespace, name, resource) == devices
