"""A claim allocated on a node where its driver is not running (published slices, no kubelet plugin): the pod
cannot start, and deleting it must not wait for the driver. The kubelet looks every driver up before it takes a
reference on the claim (pkg/kubelet/cm/dra/manager.go prepareResources, module source v1.37.1), so there is
nothing to unprepare (PR #131968)."""

import pytest
from device_conformance.fixtures.dra_drivers import unique_driver
from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.expectations.dra import FIRST_DRA_MINOR, MISSING_DRIVER_BLOCKS_POD_DELETION
from device_conformance.fakes.dra_driver import DeviceSpec
from device_conformance.fakes.dra_driver.kubeapi import ensure_device_class
from device_conformance.fakes.dra_driver.resourceslices import build_resource_slice
from device_conformance.kube import dra, pods

pytestmark = [
    pytest.mark.dra,
    pytest.mark.since(f"1.{FIRST_DRA_MINOR}", "resource.k8s.io/v1beta1, the oldest API the DRA objects fit"),
]


@pytest.fixture
def absent_driver(cluster, kube, node, resource_api):
    """A driver name with a DeviceClass and a ResourceSlice of one device on the node, published as a driver would,
    but no kubelet plugin: it never registers."""
    name = unique_driver()
    body = build_resource_slice(
        driver=name,
        node_name=node.name,
        pool=node.name,
        generation=1,
        devices=[DeviceSpec("dev-0")],
        api_version=resource_api,
    )
    kube.custom.create_cluster_custom_object(dra.GROUP, resource_api.split("/")[1], "resourceslices", body)
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
