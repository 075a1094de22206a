"""Smoke: the node-control faults every later suite relies on, each checked on the real kubelet."""

import pytest

from device_conformance.kube import pods
from device_conformance.wait import kube as wait

pytestmark = [pytest.mark.smoke, pytest.mark.disruptive]


@pytest.fixture
def running_pod(kube, namespace, make_pod):
    pod = make_pod("sleeper", ["sleep", "86400"], restart_policy="Always")
    return wait.for_pod_running_ready(kube, namespace, pod.metadata.name)


def test_running_pod_survives_kubelet_restart(kube, namespace, node, running_pod):
    """A graceful kubelet restart keeps a running pod: same UID, Running, Ready, no container restart."""
    node.kubelet.restart()
    wait.for_node_ready(kube, node.name)
    after = wait.for_pod_running_ready(kube, namespace, running_pod.metadata.name)
    assert after.metadata.uid == running_pod.metadata.uid
    assert after.status.container_statuses[0].restart_count == 0
    assert after.status.container_statuses[0].container_id == running_pod.status.container_statuses[0].container_id


def test_kubelet_comes_back_after_sigkill(kube, namespace, node, running_pod):
    """A SIGKILLed kubelet is restarted by its supervisor, the node returns Ready and the pod keeps running."""
    killed_pid = node.kubelet.pid()
    node.kubelet.crash()
    assert node.kubelet.pid() != killed_pid
    wait.for_node_ready(kube, node.name)
    after = wait.for_pod_running_ready(kube, namespace, running_pod.metadata.name)
    assert after.metadata.uid == running_pod.metadata.uid


def test_frozen_kubelet_resumes_after_sigcont(kube, node):
    """SIGSTOP freezes the kubelet (healthz stops answering); SIGCONT thaws it."""
    node.kubelet.freeze()
    try:
        assert not node.kubelet.healthy()
    finally:
        node.kubelet.thaw()
    node.kubelet.wait_healthy(timeout=30)
    wait.for_node_ready(kube, node.name)


def test_reboot_simulation_recreates_the_pod_sandbox(kube, namespace, node, running_pod):
    """Upstream's reboot (kubelet stopped, every sandbox removed through CRI) makes the kubelet build a
    new sandbox for the same pod: same UID, new container, Running and Ready again."""
    removed = node.simulate_reboot()
    assert removed >= 1
    wait.for_node_ready(kube, node.name)

    def restarted():
        pod = pods.read(kube, namespace, running_pod.metadata.name)
        statuses = pod.status.container_statuses or []
        new_container = statuses and statuses[0].container_id != running_pod.status.container_statuses[0].container_id
        return pod if new_container and pods.is_ready(pod) else None

    from device_conformance.wait.core import until

    after = until(restarted, what="the pod to run again in a new sandbox", timeout=120)
    assert after.metadata.uid == running_pod.metadata.uid
