"""A kubelet upgrade on a node with device pods: the previous minor's kubelet allocates and writes the
checkpoint, the current kubelet starts on the same state."""

import pytest

from device_conformance import podresources
from device_conformance.fakes.device_plugin import AllocateConfig
from device_conformance.kube import nodes, pods
from device_conformance.kubelet_state import devicemanager
from device_conformance.wait import kube as wait
from device_conformance.wait import podresources as wait_podresources
from device_conformance.wait.core import Pending, until

pytestmark = [pytest.mark.deviceplugin, pytest.mark.checkpoint, pytest.mark.disruptive]

CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
TIMEOUT = 60


def _kubelet_reports(kube, node_name, version):
    def probe():
        seen = nodes.kubelet_version(kube, node_name)
        return True if seen == f"v{version}" else Pending(f"node reports kubelet {seen}")

    until(probe, what=f"node {node_name} to report kubelet v{version}", timeout=TIMEOUT)


def test_device_pods_survive_a_kubelet_upgrade_from_the_previous_minor(
    kube, node, namespace, make_pod, device_plugin, kube_version, upgrade_from
):
    plugin = device_plugin(devices=("dev-0", "dev-1"), allocate=AllocateConfig(envs={"DC_DEVICES": "{ids}"}))
    resource = plugin.config.resource_name
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))

    node.kubelet.stop()
    node.kubelet.start(binary=upgrade_from.binary, version=upgrade_from.version)
    _kubelet_reports(kube, node.name, upgrade_from.version)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=TIMEOUT)
    pod = make_pod("upgraded", ["sh", "-c", 'echo "devices=$DC_DEVICES"; exec sleep 86400'], resources={resource: 1})
    name = pod.metadata.name
    before = wait.for_pod_running_ready(kube, namespace, name, timeout=TIMEOUT)
    devices = wait_podresources.device_ids(socket, namespace, name, resource)
    written_by_previous = devicemanager.parse(node.read_file(CHECKPOINT))
    assert written_by_previous.valid, written_by_previous.reason

    node.kubelet.stop()
    node.kubelet.start()
    _kubelet_reports(kube, node.name, kube_version)
    wait.for_node_ready(kube, node.name)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=TIMEOUT)

    after = wait.for_pod_running_ready(kube, namespace, name, timeout=TIMEOUT)
    assert after.metadata.uid == before.metadata.uid
    assert after.status.container_statuses[0].restart_count == 0, pods.summary(after)
    assert wait_podresources.device_ids(socket, namespace, name, resource) == devices
    assert len(plugin.calls("Allocate")) == 1, "the upgraded kubelet must not allocate the running pod again"
    second = make_pod("second", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, second.metadata.name, timeout=TIMEOUT)
    other = wait_podresources.device_ids(socket, namespace, second.metadata.name, resource)
    assert other and other != devices, f"the upgraded kubelet handed out {other} again while {name} holds {devices}"
