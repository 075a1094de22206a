"""Plugin registration of the DRA driver: GetInfo failures, the service socket coming up after registration,
a driver naming no endpoint, the DRA service stopped apart from the registrar, the gRPC service the kubelet picks
from what each driver advertises."""

import pytest
from device_conformance.fixtures.dra_pods import claim_with_requests, claims_pod

from device_conformance.framework import (
    FIRST_DRA_CONNECTION_MONITORING_MINOR,
    SINCE_DRA,
    claim_record,
    timeouts,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


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
def test_service_socket_up_after_registration(node, dra_driver, dra_objects, kube_version):
    """Upstream DRA13: registration succeeds without the service socket; the kubelet's gRPC channel keeps
    dialing (with backoff) and connects once the socket is there (logged from 1.34), then pods are served."""
    mark = node.kubelet.log_mark()
    driver = dra_driver(devices=("dev-0",), serve_dra_on_start=False)
    driver.wait_for_registration(timeout=timeouts.DRA_REGISTRATION)
    driver.start_dra_service()
    if kube_version.at_least(FIRST_DRA_CONNECTION_MONITORING_MINOR):
        wait_dra.for_kubelet_connection(node, mark, driver.config.driver_name)
    pod = dra_objects.claim_pod("late", driver)
    pod.wait_running()
    assert claim_record(driver.calls("NodePrepareResources")) == [([pod.claim_uid()], "ok")], "prepared once"


def test_a_driver_naming_no_endpoint_is_called_on_its_registration_socket(dra_driver, dra_objects):
    """GetInfo's endpoint is optional (pluginregistration/v1 api.proto PluginInfo.endpoint, "Optional endpoint
    location"): a driver serving everything on its registration socket and naming no endpoint is registered, and the
    kubelet calls NodePrepareResources there (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go:
    `if infoResp.Endpoint == "" { infoResp.Endpoint = socketPath }`)."""
    driver = dra_driver(devices=("dev-0",), patterns=["dra-on-registration-socket"])
    pod = dra_objects.claim_pod("one-socket", driver)
    pod.wait_running()
    prepares = driver.calls("NodePrepareResources")
    assert claim_record(prepares) == [([pod.claim_uid()], "ok")], "prepared once"
    socket = driver.config.registration_socket.rsplit("/", 1)[-1]
    assert [c.socket for c in prepares] == [socket], "called on the registration socket"


@pytest.mark.slow  # the pod is retried at the kubelet's resync interval (60-90 s)
@pytest.mark.scenario("DRA14")
def test_prepare_waits_for_a_stopped_dra_service(node, dra_driver, dra_objects, kube_version):
    """The registrar stays, the DRA service goes: NodePrepareResources cannot reach the driver, the pod
    waits and runs once the service is back."""
    driver = dra_driver(devices=("dev-0",))
    driver.stop_dra_service()
    pod = dra_objects.claim_pod("nosvc", driver)

    event = pod.wait_prepare_refusal()
    assert "NodePrepareResources" in event, f"FailedPrepareDynamicResources event: {event}"
    phase = pod.read().status.phase
    assert phase == "Pending", f"{pod} is {phase} while its driver's DRA service is down"
    assert driver.calls("NodePrepareResources") == [], "the service is stopped: no call can have reached it"
    mark = node.kubelet.log_mark()
    driver.start_dra_service()
    if kube_version.at_least(FIRST_DRA_CONNECTION_MONITORING_MINOR):
        wait_dra.for_kubelet_connection(node, mark, driver.config.driver_name)
    pod.wait_running(timeout=timeouts.PREPARE_RETRY_AT_RESYNC)
    # The calls that could not reach the stopped service are not in the driver's log: one call, the one that worked.
    assert claim_record(driver.calls("NodePrepareResources")) == [([pod.claim_uid()], "ok")], "prepared once"


V1 = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
V1BETA1 = "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"
NODE_CALLS = ("NodePrepareResources", "NodeUnprepareResources")
# What each driver advertises -> the service the kubelet must call: from 1.34 it supports v1 and v1beta1 and
# walks the plugin's list in the plugin's order, taking the first it supports (validateSupportedServices,
# pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go, module source v1.37.1).
SERVICE_CHOICES = {
    "v1beta1-only": (["v1beta1.DRAPlugin"], V1BETA1),
    "v1-only": (["v1.DRAPlugin"], V1),
    "v1-first": (["v1.DRAPlugin", "v1beta1.DRAPlugin"], V1),
    "v1beta1-first": (["v1beta1.DRAPlugin", "v1.DRAPlugin"], V1BETA1),
}


@pytest.mark.since("1.34", "the kubelet calls DRA v1 beside v1beta1 from 1.34 (dra/v1 in kubernetes/kubelet v0.34.0)")
@pytest.mark.scenario("DRA-E1", "DRA-E29")
def test_each_driver_is_called_through_the_first_service_it_advertises(dra_driver, dra_objects):
    """Four drivers, each advertising only v1beta1, only v1, or both in either order; one pod with a claim of
    each. Every driver is registered once (GetInfo, then NotifyRegistrationStatus true), and NodePrepareResources
    and NodeUnprepareResources reach it exactly once, through the service the kubelet chose (the fake serves
    both on its socket, so a wrong choice would be answered, and show in its call log)."""
    drivers = {key: dra_driver(devices=("dev-0",), services=services) for key, (services, _) in SERVICE_CHOICES.items()}
    claims = {key: claim_with_requests(dra_objects, {"dev": d.config.driver_name}) for key, d in drivers.items()}
    pod = claims_pod(dra_objects, "services", claims, {"main": list(claims)}, command=["sleep", "86400"])
    pod.wait_running(timeout=timeouts.CLAIM_POD_START)
    uids = {key: dra_objects.get_claim(claim)["metadata"]["uid"] for key, claim in claims.items()}
    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)
    for key, driver in drivers.items():
        expected = SERVICE_CHOICES[key][1]
        registrations = [(r.ok, r.error) for r in driver.registrations()]
        assert registrations == [(True, "")], f"{key}: the kubelet's registration verdicts {registrations}"
        assert [c.method for c in driver.calls() if c.service == "pluginregistration.Registration"] == [
            "GetInfo",
            "NotifyRegistrationStatus",
        ], f"{key}: registration calls"
        # Prepare and unprepare only: a 1.36 kubelet also calls NodeWatchResources on every driver, which the fake
        # logs as a call to a service it lacks (kubernetes#141855, test_dra_health.py).
        seen = [(c.method, c.service, c.claim_uids, c.outcome()) for c in driver.calls() if c.method in NODE_CALLS]
        assert seen == [
            ("NodePrepareResources", expected, [uids[key]], "ok"),
            ("NodeUnprepareResources", expected, [uids[key]], "ok"),
        ], f"{key} advertised {SERVICE_CHOICES[key][0]}"
