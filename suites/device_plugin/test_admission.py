"""Admission of pods that request devices: Allocate responses reach the container; failures fail the pod."""

import pytest

from device_conformance import podresources
from device_conformance.fakes.device_plugin import AllocateConfig
from device_conformance.kube import pods
from device_conformance.wait import kube as wait
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


def _log_line(kube, namespace, name, prefix):
    def probe():
        for line in pods.logs(kube, namespace, name).splitlines():
            if line.startswith(prefix):
                return line[len(prefix) :]
        return Pending("no matching log line yet")

    return until(probe, what=f"a {prefix!r} line in the log of {namespace}/{name}", timeout=30)


def _failed_admission(kube, namespace, name):
    def probe():
        pod = pods.read(kube, namespace, name)
        return pod if pod.status.phase == "Failed" else Pending(pods.summary(pod))

    return until(probe, what=f"pod {namespace}/{name} to fail admission", timeout=POD_TIMEOUT)


def test_pod_gets_a_device_env_from_allocate_and_podresources_agrees(kube, node, namespace, make_pod, plugin):
    resource = plugin.config.resource_name
    pod = make_pod("dev", ["sh", "-c", 'echo "devices=$DC_DEVICES"; exec sleep 86400'], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    seen = _log_line(kube, namespace, pod.metadata.name, "devices=")
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
    failed = _failed_admission(kube, namespace, pod.metadata.name)
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message
    assert "Requested: 3, Available: 2" in failed.status.message, failed.status.message
    assert plugin.calls("Allocate") == []


def test_allocate_error_fails_admission_with_the_plugins_message(kube, namespace, make_pod, plugin):
    resource = plugin.config.resource_name
    plugin.fail("Allocate", "INTERNAL", "fake allocate failure")
    pod = make_pod("doomed", ["sleep", "86400"], resources={resource: 1})
    failed = _failed_admission(kube, namespace, pod.metadata.name)
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message
    assert "fake allocate failure" in failed.status.message, failed.status.message
    assert len(plugin.calls("Allocate")) == 1
