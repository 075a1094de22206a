"""A claim allocated on a node where its driver is not running (published slices, no kubelet plugin): the pod
cannot start, and deleting it must not wait for the driver. The kubelet looks every driver up before it takes a
reference on the claim (pkg/kubelet/cm/dra/manager.go prepareResources, module source v1.37.1), so there is
nothing to unprepare (PR #131968)."""

import pytest
from device_conformance.fixtures.dra_drivers import unique_driver
from kubernetes import client

from device_conformance.framework import (
    MISSING_DRIVER_BLOCKS_POD_DELETION,
    SINCE_DRA,
    dra,
    ensure_device_class,
    pods,
    publish_slice,
    timeouts,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


@pytest.fixture
def absent_driver(cluster, kube, node, resource_api):
    """A driver name with a DeviceClass and a ResourceSlice of one device on the node, published as a driver would,
    but no kubelet plugin: it never registers."""
    name = unique_driver()
    publish_slice(kube, resource_api, node.name, name)
    ensure_device_class(name, kubeconfig=str(cluster.kubeconfig), api_version=resource_api)
    yield name
    dra.delete_device_class(kube, resource_api, name)
    dra.delete_slices(kube, resource_api, driver=name)


@pytest.mark.known_bug(MISSING_DRIVER_BLOCKS_POD_DELETION)
def test_pod_of_a_driver_missing_on_the_node_can_be_deleted(absent_driver, dra_objects, shows_known_bug):
    """kubernetes#131968: the scheduler allocates the absent driver's device; the kubelet refuses to prepare it,
    and an ordinary delete of the pod completes."""
    pod = dra_objects.claim_pod("no-driver", absent_driver)
    event = pod.wait_prepare_refusal()
    assert absent_driver in event, f"the kubelet's refusal names the driver: {event}"
    assert pod.allocated_devices() == ["dev-0"], "the claim is allocated on the node"
    pod.delete()
    try:
        with shows_known_bug(MISSING_DRIVER_BLOCKS_POD_DELETION):
            # An affected kubelet fails every unprepare on the missing driver: the pod stays Terminating.
            pod.wait_gone(timeout=timeouts.POD_GONE)
    finally:
        try:
            pods.force_delete(dra_objects.kube, dra_objects.namespace, pod.name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
