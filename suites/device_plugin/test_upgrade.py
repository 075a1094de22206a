"""A kubelet upgrade on a node with device pods: the previous minor's kubelet allocates and writes the
checkpoint, the current kubelet starts on the same state."""

import pytest
from device_conformance.fixtures.device_plugins import DEVICES_ENV, allocations

from device_conformance.framework import (
    AllocateConfig,
    Pending,
    assert_lists,
    devicemanager,
    nodes,
    pods,
    timeouts,
    until,
    wait,
)

pytestmark = [pytest.mark.deviceplugin, pytest.mark.checkpoint, pytest.mark.disruptive]

CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def _kubelet_reports(kube, node_name, version):
    def probe():
        seen = nodes.kubelet_version(kube, node_name)
        return True if seen == f"v{version}" else Pending(f"node reports kubelet {seen}")

    until(probe, what=f"node {node_name} to report kubelet v{version}", timeout=timeouts.KUBELET_SWAP)


def test_device_pods_survive_a_kubelet_upgrade_from_the_previous_minor(
    kube, node, pod_factory, node_resource, device_plugin, kube_version, upgrade_from
):
    # Not registered_plugin: the kubelet is swapped at once, without waiting for this one to list the devices.
    plugin = device_plugin(devices=("dev-0", "dev-1"), allocate=AllocateConfig(envs={DEVICES_ENV: "{ids}"}))
    resource = plugin.config.resource_name
    counts = node_resource(resource)

    node.kubelet.stop()
    node.kubelet.start(binary=upgrade_from.binary, version=upgrade_from.version)
    _kubelet_reports(kube, node.name, upgrade_from.version)
    counts.wait_counts(2, 2, timeouts.KUBELET_SWAP)
    pod = pod_factory(
        "upgraded", ["sh", "-c", f'echo "devices=${DEVICES_ENV}"; exec sleep 86400'], resources={resource: 1}
    )
    pod.wait_running(timeouts.KUBELET_SWAP)
    [held] = allocations(plugin, 1)
    assert_lists(pod, resource, held, f"under kubelet {upgrade_from.version}")
    written_by_previous = devicemanager.parse(node.read_file(CHECKPOINT))
    assert written_by_previous.valid, written_by_previous.reason

    node.kubelet.stop()
    node.kubelet.start()
    _kubelet_reports(kube, node.name, kube_version)
    wait.for_node_ready(kube, node.name)
    counts.wait_counts(2, 2, timeouts.KUBELET_SWAP)

    after = pod.wait_running(timeouts.KUBELET_SWAP)
    main = next((s for s in after.status.container_statuses or [] if s.name == "main"), None)
    assert after.metadata.uid == pod.uid and main is not None and main.restart_count == 0, (
        f"after the upgrade the pod is not the same, unrestarted one: uid {after.metadata.uid} (was {pod.uid}), "
        f"{pods.summary(after)}"
    )
    seen = pod.log_line("devices=")
    assert seen == ",".join(held), f"the container saw devices {seen!r}, the kubelet allocated {held}"
    assert_lists(pod, resource, held, f"after the upgrade to {kube_version}")
    allocations(plugin, 1)  # the upgraded kubelet does not allocate the running pod again
    second = pod_factory("second", ["sleep", "86400"], resources={resource: 1})
    second.wait_running(timeouts.KUBELET_SWAP)
    _, other = allocations(plugin, 1, 1)
    assert sorted(held + other) == ["dev-0", "dev-1"], (
        f"the upgraded kubelet handed out {other} while {pod.name} holds {held}"
    )
    assert_lists(second, resource, other, "the pod after the upgrade")
