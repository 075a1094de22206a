"""Smoke: the chain under every suite works on a real cluster (node, scheduler, runtime, kubelet)."""

import pytest

from device_conformance.framework import nodes, timeouts, wait

pytestmark = pytest.mark.smoke


def test_node_ready_with_expected_kubelet_version(cluster, kube, node):
    """The node registers, becomes Ready and reports the kubelet version under test."""
    wait.for_node_ready(kube, node.name)
    assert nodes.kubelet_version(kube, node.name) == f"v{cluster.k8s_version}"


def test_pod_runs_to_completion_and_its_log_is_read(pod_factory):
    """A pod goes through the real scheduler and runtime to Succeeded; its log comes back through the kubelet."""
    pod = pod_factory("hello", ["sh", "-c", "echo device-conformance says hello"])
    done = pod.wait_phase("Succeeded", timeout=timeouts.POD_START_UNNAMED)
    assert done.spec.node_name, "the scheduler bound the pod to a node"
    assert pod.logs().strip() == "device-conformance says hello"
