"""Admission of pods that request devices: Allocate responses reach the container; failures fail the pod."""

import pytest

from device_conformance import podresources
from device_conformance.fakes.device_plugin import AllocateConfig, MountConfig
from device_conformance.kube import pods
from device_conformance.wait import kube as wait
from device_conformance.wait import podresources as wait_podresources
from device_conformance.wait.core import Pending, until

pytestmark = pytest.mark.deviceplugin

COUNT_TIMEOUT = 15
POD_TIMEOUT = 60
ADMISSION_ERROR = "UnexpectedAdmissionError"


@pytest.fixture
def plugin(kube, node, device_plugin):
    handle = device_plugin(devices=("dev-0", "dev-1"), allocate=AllocateConfig(envs={"DC_DEVICES": "{ids}"}))
    wait.for_resource_counts(kube, node.name, handle.config.resource_name, 2, 2, timeout=COUNT_TIMEOUT)
    return handle


def test_pod_gets_a_device_env_from_allocate_and_podresources_agrees(kube, node, namespace, make_pod, plugin):
    resource = plugin.config.resource_name
    pod = make_pod("dev", ["sh", "-c", 'echo "devices=$DC_DEVICES"; exec sleep 86400'], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    seen = wait.for_log_line(kube, namespace, pod.metadata.name, "devices=")
    assert seen in ("dev-0", "dev-1"), seen

    allocates = plugin.calls("Allocate")
    assert len(allocates) == 1
    assert allocates[0].request["container_requests"][0]["devices_ids"] == [seen]

    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    entry = podresources.find_pod(podresources.list_pod_resources(socket), pod.metadata.name, namespace)
    assert entry is not None
    assert entry.container("main").device_ids == {resource: [seen]}
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)


def test_over_request_fails_admission(kube, node, namespace, make_pod, plugin):
    """Bound straight to the node (bypassing the scheduler), a pod asking for more devices than exist
    fails kubelet admission for good: Failed, UnexpectedAdmissionError, no Allocate call."""
    resource = plugin.config.resource_name
    pod = make_pod("greedy", ["sleep", "86400"], resources={resource: 3}, node_name=node.name)
    failed = wait.for_admission_failure(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message
    assert "Requested: 3, Available: 2" in failed.status.message, failed.status.message
    assert plugin.calls("Allocate") == []


def test_allocate_error_fails_admission_with_the_plugins_message(kube, namespace, make_pod, plugin):
    resource = plugin.config.resource_name
    plugin.fail("Allocate", "INTERNAL", "fake allocate failure")
    pod = make_pod("doomed", ["sleep", "86400"], resources={resource: 1})
    failed = wait.for_admission_failure(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message
    assert "fake allocate failure" in failed.status.message, failed.status.message
    assert len(plugin.calls("Allocate")) == 1


def test_allocate_mount_is_visible_in_the_container(kube, node, namespace, make_pod, device_plugin, tmp_path):
    """A per-device host directory the Allocate response mounts shows up read-only in the container."""
    for device in ("dev-0", "dev-1"):
        (tmp_path / device).mkdir()
        (tmp_path / device / "identity").write_text(f"I am {device}\n")
    mount = MountConfig(container_path="/dev-info/{id}", host_path=f"{tmp_path}/{{id}}", read_only=True)
    plugin = device_plugin(devices=("dev-0", "dev-1"), allocate=AllocateConfig(mounts=[mount]))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    script = 'for f in /dev-info/*/identity; do echo "seen=$(cat $f)"; done; '
    script += 'for d in /dev-info/*; do touch "$d/x" 2>/dev/null || echo ro=yes; done'
    pod = make_pod("mount", ["sh", "-c", f"{script}; exec sleep 86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    device = plugin.calls("Allocate")[0].request["container_requests"][0]["devices_ids"][0]
    assert wait.for_log_line(kube, namespace, pod.metadata.name, "seen=") == f"I am {device}"
    assert wait.for_log_line(kube, namespace, pod.metadata.name, "ro=") == "yes"


def test_init_container_device_is_reused_by_the_sidecar_not_the_app(kube, node, namespace, make_pod, plugin):
    """Init, sidecar (restartable init) and app container each ask for 1 of 2 devices: the init
    container's device is handed on to the sidecar, the app container gets the other one, and
    podresources lists the sidecar and the app container with one device each (upstream DP10)."""
    resource = plugin.config.resource_name
    echo = 'echo "devices=$DC_DEVICES"'
    init = pods.container_spec("init", ["sh", "-c", echo], resources={resource: 1})
    sidecar = pods.container_spec(
        "sidecar", ["sh", "-c", f"{echo}; exec sleep 86400"], resources={resource: 1}, restart_policy="Always"
    )
    pod = make_pod(
        "sidecar", ["sh", "-c", f"{echo}; exec sleep 86400"], resources={resource: 1}, init_containers=[init, sidecar]
    )
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    seen = {c: wait.for_log_line(kube, namespace, name, "devices=", container=c) for c in ("init", "sidecar", "main")}
    assert seen["init"] == seen["sidecar"], seen
    assert seen["main"] != seen["sidecar"] and seen["main"] in ("dev-0", "dev-1"), seen

    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    entry = wait_podresources.for_listed_pod(socket, namespace, name)
    listed = {c.name: c.device_ids.get(resource) for c in entry.containers if c.device_ids}
    assert listed == {"sidecar": [seen["sidecar"]], "main": [seen["main"]]}, listed


def test_pod_is_listed_without_devices_while_allocate_is_in_flight(kube, node, namespace, make_pod, plugin):
    """podresources must not report devices the plugin has not allocated yet (upstream §2.6)."""
    resource = plugin.config.resource_name
    plugin.block("Allocate")
    pod = make_pod("inflight", ["sleep", "86400"], resources={resource: 1})
    plugin.wait_for_call("Allocate")
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))

    def listed_without_devices():
        entry = podresources.find_pod(podresources.list_pod_resources(socket), pod.metadata.name, namespace)
        if entry is None:
            return Pending("pod not listed yet")
        held = {c.name: c.device_ids for c in entry.containers if c.device_ids}
        assert not held, f"devices reported while Allocate is blocked: {held}"
        return entry

    until(listed_without_devices, what=f"podresources to list {pod.metadata.name} (Allocate blocked)", timeout=30)
    plugin.unblock("Allocate")
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    granted = plugin.calls("Allocate")[0].request["container_requests"][0]["devices_ids"]
    assert wait_podresources.device_ids(socket, namespace, pod.metadata.name, resource) == granted


def test_restarted_container_keeps_its_device(kube, node, namespace, make_pod, plugin):
    """A container that exits and is restarted by the kubelet gets the same device, without a new
    Allocate call (upstream DP3)."""
    resource = plugin.config.resource_name
    script = 'echo "devices=$DC_DEVICES"; exit 1'
    pod = make_pod("restart", ["sh", "-c", script], resources={resource: 1}, restart_policy="Always")
    name = pod.metadata.name
    first = wait.for_log_line(kube, namespace, name, "devices=")

    def restarted():
        current = pods.read(kube, namespace, name)
        statuses = current.status.container_statuses or []
        return current if statuses and statuses[0].restart_count >= 1 else Pending(pods.summary(current))

    until(restarted, what=f"container main of {namespace}/{name} to be restarted", timeout=POD_TIMEOUT)
    assert wait.for_log_line(kube, namespace, name, "devices=") == first
    assert len(plugin.calls("Allocate")) == 1, "a container restart must reuse the pod's allocation"
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    assert wait_podresources.device_ids(socket, namespace, name, resource) == [first]
