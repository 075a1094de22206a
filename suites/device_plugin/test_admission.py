"""Admission of pods that request devices: Allocate responses reach the container; failures fail the pod."""

import pytest
from device_conformance.fixtures.device_plugins import DEVICES_ENV

from device_conformance.fakes.device_plugin import AllocateConfig, MountConfig
from device_conformance.kube import pods

pytestmark = pytest.mark.deviceplugin

ADMISSION_ERROR = "UnexpectedAdmissionError"
ECHO_DEVICES = f'echo "devices=${DEVICES_ENV}"'  # what registered_plugin's Allocate put into the env


@pytest.mark.scenario("DP1")
def test_pod_gets_a_device_env_from_allocate_and_podresources_agrees(pod_factory, node_resource, registered_plugin):
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory("dev", ["sh", "-c", f"{ECHO_DEVICES}; exec sleep 86400"], resources={resource: 1})
    pod.wait_running()
    seen = pod.log_line("devices=")
    assert seen in ("dev-0", "dev-1"), seen

    allocates = plugin.calls("Allocate")
    assert len(allocates) == 1
    assert allocates[0].request["container_requests"][0]["devices_ids"] == [seen]

    entry = pod.podresources()
    assert entry is not None
    assert entry.container("main").device_ids == {resource: [seen]}
    node_resource(resource).wait_counts(2, 2)


@pytest.mark.scenario("DM-U4")
def test_over_request_fails_admission(node, pod_factory, registered_plugin):
    """Bound straight to the node (bypassing the scheduler), a pod asking for more devices than exist
    fails kubelet admission for good: Failed, UnexpectedAdmissionError, no Allocate call."""
    resource = registered_plugin.config.resource_name
    pod = pod_factory("greedy", ["sleep", "86400"], resources={resource: 3}, node_name=node.name)
    failed = pod.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message
    assert "Requested: 3, Available: 2" in failed.status.message, failed.status.message
    assert registered_plugin.calls("Allocate") == []


def test_allocate_error_fails_admission_with_the_plugins_message(pod_factory, registered_plugin):
    plugin = registered_plugin
    resource = plugin.config.resource_name
    plugin.fail("Allocate", "INTERNAL", "fake allocate failure")
    pod = pod_factory("doomed", ["sleep", "86400"], resources={resource: 1})
    failed = pod.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message
    assert "fake allocate failure" in failed.status.message, failed.status.message
    assert len(plugin.calls("Allocate")) == 1


def test_allocate_mount_is_visible_in_the_container(pod_factory, register_plugin, tmp_path):
    """A per-device host directory the Allocate response mounts shows up read-only in the container."""
    for device in ("dev-0", "dev-1"):
        (tmp_path / device).mkdir()
        (tmp_path / device / "identity").write_text(f"I am {device}\n")
    mount = MountConfig(container_path="/dev-info/{id}", host_path=f"{tmp_path}/{{id}}", read_only=True)
    plugin = register_plugin(("dev-0", "dev-1"), allocate=AllocateConfig(mounts=[mount]))
    resource = plugin.config.resource_name
    script = 'for f in /dev-info/*/identity; do echo "seen=$(cat $f)"; done; '
    script += 'for d in /dev-info/*; do touch "$d/x" 2>/dev/null || echo ro=yes; done'
    pod = pod_factory("mount", ["sh", "-c", f"{script}; exec sleep 86400"], resources={resource: 1})
    pod.wait_running()
    device = plugin.calls("Allocate")[0].request["container_requests"][0]["devices_ids"][0]
    assert pod.log_line("seen=") == f"I am {device}"
    assert pod.log_line("ro=") == "yes"


@pytest.mark.scenario("DP10")
def test_init_container_device_is_reused_by_the_sidecar_not_the_app(pod_factory, registered_plugin):
    """Init, sidecar (restartable init) and app container each ask for 1 of 2 devices: the init
    container's device is handed on to the sidecar, the app container gets the other one, and
    podresources lists the sidecar and the app container with one device each."""
    resource = registered_plugin.config.resource_name
    init = pods.container_spec("init", ["sh", "-c", ECHO_DEVICES], resources={resource: 1})
    sidecar = pods.container_spec(
        "sidecar", ["sh", "-c", f"{ECHO_DEVICES}; exec sleep 86400"], resources={resource: 1}, restart_policy="Always"
    )
    pod = pod_factory(
        "sidecar",
        ["sh", "-c", f"{ECHO_DEVICES}; exec sleep 86400"],
        resources={resource: 1},
        init_containers=[init, sidecar],
    )
    pod.wait_running()
    seen = {c: pod.log_line("devices=", container=c) for c in ("init", "sidecar", "main")}
    assert seen["init"] == seen["sidecar"], seen
    assert seen["main"] != seen["sidecar"] and seen["main"] in ("dev-0", "dev-1"), seen

    entry = pod.wait_podresources()
    listed = {c.name: c.device_ids.get(resource) for c in entry.containers if c.device_ids}
    assert listed == {"sidecar": [seen["sidecar"]], "main": [seen["main"]]}, listed


@pytest.mark.scenario("DP-A1")
def test_pod_is_listed_without_devices_while_allocate_is_in_flight(pod_factory, registered_plugin):
    """podresources must not report devices the plugin has not allocated yet."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    plugin.block("Allocate")
    pod = pod_factory("inflight", ["sleep", "86400"], resources={resource: 1})
    plugin.wait_for_call("Allocate")
    # Allocate stays blocked until unblocked below, so the first listing must already hold no devices.
    entry = pod.wait_podresources()
    held = {c.name: c.device_ids for c in entry.containers if c.device_ids}
    assert not held, f"devices reported while Allocate is blocked: {held}"

    plugin.unblock("Allocate")
    pod.wait_running()
    granted = plugin.calls("Allocate")[0].request["container_requests"][0]["devices_ids"]
    assert pod.devices(resource) == granted


@pytest.mark.scenario("DP3")
def test_restarted_container_keeps_its_device(pod_factory, registered_plugin):
    """A container that exits and is restarted by the kubelet gets the same device, without a new
    Allocate call."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory(
        "restart", ["sh", "-c", f"{ECHO_DEVICES}; exit 1"], resources={resource: 1}, restart_policy="Always"
    )
    first = pod.log_line("devices=")
    pod.wait_restarted("main")
    assert pod.log_line("devices=") == first
    assert len(plugin.calls("Allocate")) == 1, "a container restart must reuse the pod's allocation"
    assert pod.devices(resource) == [first]
