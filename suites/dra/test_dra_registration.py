"""Plugin registration of the DRA driver: GetInfo failures, the service socket coming up after registration,
the DRA service stopped apart from the registrar."""

import pytest

from device_conformance.expectations.dra import CLAIM_POD_START_TIMEOUT
from device_conformance.kube import pods
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait

pytestmark = pytest.mark.dra

POD_TIMEOUT = CLAIM_POD_START_TIMEOUT
REGISTRATION_TIMEOUT = 30
# The plugin manager's reconciler retries a failed registration with exponential backoff.
REGISTRATION_RETRY_TIMEOUT = 60
# A failed NodePrepareResources does not fail the pod sync (kuberuntime_manager.go SyncPod logs, emits the
# event and returns without an error), so the pod is retried at the resync interval: 60 s + up to 50 % jitter.
RESYNC_TIMEOUT = 120


def test_registration_recovers_after_getinfo_failures(dra_driver):
    driver = dra_driver(devices=("dev-0",), register_on_start=False)
    driver.fail_get_info("injected GetInfo failure")
    driver.start_registrar()
    driver.wait_for_call("GetInfo", ok=False, timeout=REGISTRATION_TIMEOUT)
    assert driver.registrations() == [], "no registration notification while GetInfo fails"

    driver.clear_faults()
    driver.wait_for_registration(timeout=REGISTRATION_RETRY_TIMEOUT)


def test_service_socket_up_after_registration(kube, node, namespace, dra_driver, dra_objects):
    """Upstream DRA13: registration succeeds without the service socket; the kubelet's gRPC channel keeps
    dialing (with backoff) and connects once the socket is there, then pods are served."""
    mark = node.kubelet.log_mark()
    driver = dra_driver(devices=("dev-0",), serve_dra_on_start=False)
    driver.wait_for_registration(timeout=REGISTRATION_TIMEOUT)
    driver.start_dra_service()
    wait_dra.for_kubelet_connection(node, mark, driver.config.driver_name)
    pod = dra_objects.pod("late", template=dra_objects.template(driver.config.driver_name))
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert [c.ok for c in driver.calls("NodePrepareResources")] == [True]


@pytest.mark.slow  # the pod is retried at the kubelet's resync interval (60-90 s)
def test_prepare_waits_for_a_stopped_dra_service(kube, node, namespace, dra_driver, dra_objects):
    """The registrar stays, the DRA service goes: NodePrepareResources cannot reach the driver, the pod
    waits and runs once the service is back."""
    driver = dra_driver(devices=("dev-0",))
    driver.stop_dra_service()
    pod = dra_objects.pod("nosvc", template=dra_objects.template(driver.config.driver_name))
    name = pod.metadata.name

    event = wait_dra.for_event(kube, namespace, name, "FailedPrepareDynamicResources", timeout=POD_TIMEOUT)
    assert "NodePrepareResources" in event
    assert pods.read(kube, namespace, name).status.phase == "Pending"
    assert driver.calls("NodePrepareResources") == []
    mark = node.kubelet.log_mark()
    driver.start_dra_service()
    wait_dra.for_kubelet_connection(node, mark, driver.config.driver_name)
    wait.for_pod_running_ready(kube, namespace, name, timeout=RESYNC_TIMEOUT)
    assert driver.calls("NodePrepareResources")[-1].ok is True
