"""Device taints across nodes: one DeviceTaintRule evicts pods on two nodes, and a Deployment's pod evicted by a
taint is replaced on the healthy node's device.

One fake driver name serves every node (a driver instance per node, `dra_driver(on=node)`), each publishing a
ResourceSlice whose pool is its node's name with the same device name `dev-0`: a rule selecting driver and device
but no pool taints the device on every node (k8s.io/api resource/v1 DeviceTaintSelector: unset fields match all);
one that names the pool taints one node's device only.
"""

import pytest
from device_conformance.fixtures.dra_drivers import KEEP_FINALIZER, unique_driver

from device_conformance.framework import (
    SINCE_DEVICE_TAINTS,
    ClaimPodHandle,
    Pending,
    assert_evicted,
    dra,
    pods,
    timeouts,
    until,
)

pytestmark = [pytest.mark.taints, pytest.mark.nodes(2), SINCE_DEVICE_TAINTS]

KEY = "example.com/broken"
DEVICE = "dev-0"


def placement(pod: ClaimPodHandle) -> tuple[str, list[tuple[str, str, str]]]:
    """(the node the pod is bound to, (driver, pool, device) of each allocation result of its claim)."""
    results = ((pod.claim().get("status") or {}).get("allocation") or {}).get("devices") or {}
    devices = [(r["driver"], r["pool"], r["device"]) for r in results.get("results") or []]
    return pod.read().spec.node_name, devices


def test_one_rule_evicts_the_pods_on_every_node(cluster_nodes, dra_driver, dra_objects):
    driver = unique_driver()
    for node in cluster_nodes.nodes:
        dra_driver((DEVICE,), on=node, driver_name=driver)
    placed = {
        node.name: dra_objects.claim_pod("taint", driver, keep=True, **cluster_nodes.pod_options(on=node.name))
        for node in cluster_nodes.nodes
    }
    for node_name, pod in placed.items():
        pod.wait_running()
        assert placement(pod) == (node_name, [(driver, node_name, DEVICE)]), f"{pod} placed on another node/device"

    dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver, device=DEVICE)
    for pod in placed.values():
        assert_evicted(pod)


@pytest.fixture
def deployments(kube, namespace, dra_driver):
    """deployments(name, pod manifest) -> creates a 1-replica Deployment whose pods are that manifest. After the
    test (before the drivers drain: it depends on dra_driver) each is scaled to 0, then deleted, so no pod is
    created behind the drivers' back; the namespace's teardown drops the pods' finalizers."""
    created = []

    def create(name, pod):
        labels = {"app": name}
        template = {
            "metadata": {**pod["metadata"], "labels": {**pod["metadata"]["labels"], **labels}},
            "spec": pod["spec"],
        }
        template["metadata"].pop("name")
        body = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template},
        }
        kube.apps.create_namespaced_deployment(namespace, body)
        created.append(name)
        return f"app={name}"

    yield create
    for name in created:
        kube.apps.patch_namespaced_deployment_scale(name, namespace, {"spec": {"replicas": 0}})

        def scaled_down(name=name):
            current = kube.apps.read_namespaced_deployment(name, namespace)
            done = current.status.observed_generation >= current.metadata.generation and not current.status.replicas
            return True if done else Pending(f"status {current.status}")

        until(scaled_down, what=f"Deployment {namespace}/{name} scaled to 0", timeout=timeouts.POD_GONE)
        kube.apps.delete_namespaced_deployment(name, namespace)
        for pod in kube.core.list_namespaced_pod(namespace, label_selector=f"app={name}").items:
            pods.remove_finalizers(kube, namespace, pod.metadata.name)


def running_pods(kube, namespace, selector, exclude=()):
    """The Running, not deleted pods of `selector` whose UIDs are not in `exclude`."""
    return [
        p
        for p in kube.core.list_namespaced_pod(namespace, label_selector=selector).items
        if p.metadata.uid not in exclude and p.status.phase == "Running" and p.metadata.deletion_timestamp is None
    ]


def one_running_pod(kube, namespace, selector, resource_api, nodes, exclude=(), timeout=timeouts.CLAIM_POD_START):
    def probe():
        found = running_pods(kube, namespace, selector, exclude)
        if len(found) == 1:
            return found[0]
        seen = kube.core.list_namespaced_pod(namespace, label_selector=selector).items
        return Pending("; ".join(f"{p.metadata.name} {pods.summary(p)}" for p in seen) or "no pods")

    pod = until(probe, what=f"one Running pod of {selector} in {namespace} (not {list(exclude)})", timeout=timeout)
    return ClaimPodHandle.of(kube, pod, nodes, resource_api=resource_api)


def test_evicted_deployment_pod_is_replaced_on_the_healthy_nodes_device(
    kube, namespace, resource_api, cluster, cluster_nodes, dra_driver, dra_objects, deployments
):
    """The first pod goes where the scheduler puts it; a rule taints exactly that node's device (driver, pool,
    device); the ReplicaSet's replacement can only get the other node's device (NoExecute implies NoSchedule)."""
    driver = unique_driver()
    for node in cluster_nodes.nodes:
        dra_driver((DEVICE,), on=node, driver_name=driver)
    name = pods.unique_name("replaced")
    manifest = pods.pod_manifest(
        name, ["sleep", "86400"], restart_policy="Always", finalizers=[KEEP_FINALIZER], **cluster_nodes.pod_options()
    )
    selector = deployments(name, dra.with_claims(manifest, templates={"dev": dra_objects.template(driver)}))

    first = one_running_pod(kube, namespace, selector, resource_api, cluster.nodes)
    first_node, first_devices = placement(first)
    assert first_devices == [(driver, first_node, DEVICE)], f"{first} runs with {first_devices} on {first_node}"

    dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver, pool=first_node, device=DEVICE)
    assert_evicted(first)
    replacement = one_running_pod(kube, namespace, selector, resource_api, cluster.nodes, exclude={first.uid})
    healthy = [n.name for n in cluster_nodes.others(first_node)]
    node_name, devices = placement(replacement)
    assert node_name in healthy, f"{replacement} replaced the evicted pod on {node_name}, not on one of {healthy}"
    assert devices == [(driver, node_name, DEVICE)], f"{replacement} on {node_name} got {devices}"
