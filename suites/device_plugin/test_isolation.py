"""Isolation: a pod that requests no device sees none, and no device is held by two pods at once, also
across kubelet and plugin restarts.

What a container sees is read from inside it (env, device nodes, mounts, CDI env edits) and from the
runtime (annotations); the probe is run on a device pod too, so a probe that could not see the devices
cannot pass the check.
"""

import pytest
from device_conformance.fixtures.device_plugins import CDI_DIR, DEVICES_ENV, allocations

from device_conformance.framework import (
    ADMISSION_ERROR,
    SINCE_CDI_DEVICES_IN_ALLOCATE,
    allocate_every_field,
    env_lines_script,
    pods,
    timeouts,
)

pytestmark = pytest.mark.deviceplugin

ANNOTATION = "dc.example.com/devices"
# What a container prints of every way a device reaches it; empty lines when it has none.
PROBE = " ; ".join(
    [
        f'echo "env=${DEVICES_ENV}"',
        # From /proc, not `env`: the shell drops names that are not shell names (kube/container_env.py).
        f"echo \"cdi=$({env_lines_script('DC_CDI_')} | tr '\\n' ' ')\"",
        "echo \"mounts=$(grep ' /dev-info' /proc/self/mountinfo | awk '{print $5}' | tr '\\n' ' ')\"",
        "echo \"devnodes=$(ls /dev | grep '^dc-' | tr '\\n' ' ')\"",
        "exec sleep 86400",
    ]
)
FIELDS = ("env", "cdi", "mounts", "devnodes")


def _seen(node, pod) -> dict[str, str]:
    """What the container printed for each field, and the runtime's device annotation of it."""
    seen = {field: pod.log_line(f"{field}=").strip() for field in FIELDS}
    status = next(s for s in pod.read().status.container_statuses if s.name == "main")
    seen["annotation"] = node.container_annotations(status.container_id or "").get(ANNOTATION, "")
    return seen


@SINCE_CDI_DEVICES_IN_ALLOCATE
@pytest.mark.scenario("DP1")
def test_pod_without_a_device_request_sees_no_device(node, pod_factory, register_plugin, node_tmp_path):
    """A plugin whose Allocate answer uses every field (env, mount, device node, CDI device, annotation);
    a pod holding one of its devices sees each of them, a pod asking for none sees none of them, and the
    plugin got no call for it."""
    for device in ("dev-0", "dev-1"):
        (node_tmp_path / device).mkdir()
    allocate = allocate_every_field(DEVICES_ENV, node_tmp_path, ANNOTATION)
    plugin = register_plugin(("dev-0", "dev-1"), allocate=allocate, cdi_dir=str(node.host_path(CDI_DIR)))
    resource = plugin.config.resource_name
    holder = pod_factory("holder", ["sh", "-c", PROBE], resources={resource: 1})
    holder.wait_running()
    [[device]] = allocations(plugin, 1)
    held = _seen(node, holder)
    missing = {field: value for field, value in held.items() if device not in value}
    assert not missing, f"the probe does not see {device} in the pod holding it, fields {missing}: it proves nothing"

    plain = pod_factory("plain", ["sh", "-c", PROBE])
    plain.wait_running()
    leaked = {field: value for field, value in _seen(node, plain).items() if value}
    assert not leaked, f"a pod that requested no device sees device artefacts: {leaked}"
    allocations(plugin, 1)  # no Allocate for the plain pod
    entry = plain.wait_podresources()
    listed = {c.name: c.device_ids for c in entry.containers if c.device_ids}
    assert not listed, f"podresources lists devices for the pod that requested none: {listed}"


def _sees(pod, resource: str, granted: list[str], when: str) -> None:
    listed = sorted(pod.devices(resource))  # podresources lists a set
    assert listed == sorted(granted), f"{when}: podresources lists {listed} for {pod}, the kubelet allocated {granted}"
    seen = pod.log_line(f"{DEVICES_ENV}=")
    assert seen == ",".join(granted), f"{when}: {pod} sees devices {seen!r}, the kubelet allocated {granted}"


@pytest.mark.disruptive
@pytest.mark.scenario("DP4", "DP7")
def test_no_device_is_held_by_two_pods_across_kubelet_and_plugin_restarts(
    node, pod_factory, node_resource, registered_plugin
):
    """Two devices. A first pod takes one; after a kubelet restart a second pod gets the other; after a
    plugin restart (SIGKILL, respawn) a third pod bound to the node fails admission with no Allocate, and
    the first two still hold exactly their own devices; once the first pod is gone its device, and only
    that one, goes to the next pod."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    command = ["sh", "-c", f'echo "{DEVICES_ENV}=${DEVICES_ENV}"; exec sleep 86400']
    first = pod_factory("first", command, resources={resource: 1})
    first.wait_running()
    [one] = allocations(plugin, 1)

    node.kubelet.restart()
    plugin.wait_for_registration(count=2, timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    second = pod_factory("second", command, resources={resource: 1})
    second.wait_running()
    _, two = allocations(plugin, 1, 1)
    assert sorted(one + two) == ["dev-0", "dev-1"], f"after the kubelet restart the pods got {one} and {two}"

    plugin.kill()
    counts.wait_counts(2, 0)
    plugin.respawn()
    counts.wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    third = pod_factory("third", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    failed = third.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Requested: 1, Available: 0" in failed.status.message, failed.status.message
    allocations(plugin, 1, 1)  # none for the third pod
    _sees(first, resource, one, "after the kubelet and plugin restarts")
    _sees(second, resource, two, "after the kubelet and plugin restarts")

    first.delete()
    first.wait_gone()
    fourth = pod_factory("fourth", command, resources={resource: 1})
    fourth.wait_running()
    _, _, four = allocations(plugin, 1, 1, 1)
    assert four == one, f"the pod after the first one got {four}; only the first pod's {one} was free"
    _sees(fourth, resource, four, "the pod after the first one")
