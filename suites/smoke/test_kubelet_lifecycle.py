"""Smoke: the node-control faults every later suite relies on, each checked on the real kubelet."""

import pytest

from device_conformance.framework import Pending, pods, timeouts, until, wait

pytestmark = [pytest.mark.smoke, pytest.mark.disruptive]


@pytest.fixture
def sleeper(pod_factory):
    """A pod whose container sleeps (restarted if it ends), Running and Ready."""
    pod = pod_factory("sleeper", ["sleep", "86400"], restart_policy="Always")
    pod.wait_running(timeout=timeouts.POD_START_UNNAMED)
    return pod


def first_container_id(pod):
    """The first container's ID as the pod status reports it (None while it has none)."""
    statuses = pod.status.container_statuses or []
    return statuses[0].container_id if statuses else None


def test_running_pod_survives_kubelet_restart(node, sleeper):
    """A graceful kubelet restart keeps a running pod: same UID, Running, Ready, no container restart."""
    before = sleeper.read()
    node.kubelet.restart()
    after = sleeper.wait_running(timeout=timeouts.POD_START_UNNAMED)
    assert after.metadata.uid == before.metadata.uid
    assert after.status.container_statuses[0].restart_count == 0
    assert after.status.container_statuses[0].container_id == before.status.container_statuses[0].container_id


def test_kubelet_comes_back_after_sigkill(kube, node, sleeper):
    """A SIGKILLed kubelet is restarted by its supervisor, the node returns Ready and the pod keeps running."""
    killed_pid = node.kubelet.pid()
    node.kubelet.crash()
    assert node.kubelet.pid() != killed_pid
    wait.for_node_ready(kube, node.name)
    after = sleeper.wait_running(timeout=timeouts.POD_START_UNNAMED)
    assert after.metadata.uid == sleeper.uid


def test_frozen_kubelet_resumes_after_sigcont(kube, node):
    """SIGSTOP freezes the kubelet (healthz stops answering); SIGCONT thaws it."""
    node.kubelet.freeze()
    try:
        assert not node.kubelet.healthy()
    finally:
        node.kubelet.thaw()
    node.kubelet.wait_healthy(timeout=timeouts.KUBELET_HEALTHY_AFTER_THAW)
    wait.for_node_ready(kube, node.name)


def test_reboot_simulation_recreates_the_pod_sandbox(kube, node, sleeper):
    """Upstream's reboot (kubelet stopped, every sandbox removed through CRI) makes the kubelet build a
    new sandbox for the same pod: same UID, new container, Running and Ready again."""
    before = first_container_id(sleeper.read())
    removed = node.simulate_reboot()
    assert removed >= 1
    wait.for_node_ready(kube, node.name)
    after = running_in_a_new_container(sleeper, before, "in a new sandbox")
    assert after.metadata.uid == sleeper.uid


def test_real_reboot_restarts_the_node_and_the_pod_runs_again(kube, node, sleeper):
    """A real reboot where the provider has one (kind: `docker restart` of the node container): every process of
    the node starts afresh (its /run tmpfs emptied: a file written there before is gone), the node returns Ready
    and the same pod runs again in a new container. (Not the kubelet's pid: a fresh PID namespace may give it
    the same number again.)"""
    reboot = getattr(node, "reboot", None)
    if reboot is None:
        pytest.skip(f"node {node.name} has no real reboot (kind nodes have one: docker restart)")
    marker = "/run/dc-before-reboot"
    node.write_file(marker, b"x")
    assert node.read_file(marker) == b"x"
    before = first_container_id(sleeper.read())
    reboot()
    wait.for_node_ready(kube, node.name, timeout=timeouts.NODE_READY)
    with pytest.raises(FileNotFoundError):
        node.read_file(marker)
    after = running_in_a_new_container(sleeper, before, "after the reboot")
    assert after.metadata.uid == sleeper.uid


def running_in_a_new_container(sleeper, before: str | None, when: str):
    """The pod once it is Ready in a container other than `before` (both reboot tests wait for this)."""

    def restarted():
        pod = sleeper.read()
        now = first_container_id(pod)
        if now is None or now == before or not pods.is_ready(pod):
            return Pending(f"container {now} (before the reboot {before}): {pods.summary(pod)}")
        return pod

    return until(restarted, what=f"{sleeper} to run again {when}", timeout=timeouts.POD_START_UNNAMED)
