"""Plugin registration of the DRA driver: GetInfo failures, the service socket coming up after registration,
the DRA service stopped apart from the registrar."""

import pytest

from device_conformance import timeouts
from device_conformance.expectations.dra import FIRST_DRA_MINOR
from device_conformance.fakes.common.calls import claim_record
from device_conformance.wait import dra as wait_dra

pytestmark = [
    pytest.mark.dra,
    pytest.mark.since(f"1.{FIRST_DRA_MINOR}", "resource.k8s.io/v1beta1, the oldest API the DRA objects fit"),
]


@pytest.mark.scenario("DRA3")
def test_registration_recovers_after_getinfo_failures(dra_driver):
    driver = dra_driver(devices=("dev-0",), register_on_start=False)
    driver.fail_get_info("injected GetInfo failure")
    driver.start_registrar()
    driver.wait_for_call("GetInfo", ok=False, timeout=timeouts.DRA_REGISTRATION)
    assert driver.registrations() == [], "no registration notification while GetInfo fails"

    driver.clear_faults()
    driver.wait_for_registration(timeout=timeouts.DRA_REGISTRATION_RETRY)


@pytest.mark.scenario("DRA13")
def test_service_socket_up_after_registration(node, dra_driver, dra_objects):
    """Upstream DRA13: registration succeeds without the service socket; the kubelet's gRPC channel keeps
    dialing (with backoff) and connects once the socket is there, then pods are served."""
    mark = node.kubelet.log_mark()
    driver = dra_driver(devices=("dev-0",), serve_dra_on_start=False)
    driver.wait_for_registration(timeout=timeouts.DRA_REGISTRATION)
    driver.start_dra_service()
    wait_dra.for_kubelet_connection(node, mark, driver.config.driver_name)
    pod = dra_objects.claim_pod("late", driver)
    pod.wait_running()
    assert claim_record(driver.calls("NodePrepareResources")) == [([pod.claim_uid()], "ok")], "prepared once"


@pytest.mark.slow  # the pod is retried at the kubelet's resync interval (60-90 s)
@pytest.mark.scenario("DRA14")
def test_prepare_waits_for_a_stopped_dra_service(node, dra_driver, dra_objects):
    """The registrar stays, the DRA service goes: NodePrepareResources cannot reach the driver, the pod
    waits and runs once the service is back."""
    driver = dra_driver(devices=("dev-0",))
    driver.stop_dra_service()
    pod = dra_objects.claim_pod("nosvc", driver)

    event = pod.wait_event("FailedPrepareDynamicResources", timeout=timeouts.CLAIM_POD_START)
    assert "NodePrepareResources" in event, f"FailedPrepareDynamicResources event: {event}"
    phase = pod.read().status.phase
    assert phase == "Pending", f"{pod} is {phase} while its driver's DRA service is down"
    assert driver.calls("NodePrepareResources") == [], "the service is stopped: no call can have reached it"
    mark = node.kubelet.log_mark()
    driver.start_dra_service()
    wait_dra.for_kubelet_connection(node, mark, driver.config.driver_name)
    pod.wait_running(timeout=timeouts.PREPARE_RETRY_AT_RESYNC)
    # The calls that could not reach the stopped service are not in the driver's log: one call, the one that worked.
    assert claim_record(driver.calls("NodePrepareResources")) == [([pod.claim_uid()], "ok")], "prepared once"
