"""The fake DRA driver process: registration handshake, separate service lifecycles, health stream, kill/stop."""

import os
import shutil
import signal
import tempfile

import grpc
import pytest

from device_conformance.fakes.common.process import FakeStartError
from device_conformance.fakes.dra_driver import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.handle import start
from device_conformance.fakes.dra_driver.kubelet_client import KubeletClient
from device_conformance.protos.drahealth.v1alpha1 import api_pb2 as health_pb2

KUBELET_ENDPOINT = "/var/lib/kubelet/plugins/dra.example.com/dra.sock"
CLAIM = ("ns-1", "uid-1", "claim-1")


@pytest.fixture
def make_driver(tmp_path):
    sockets = tempfile.mkdtemp(prefix="dra-", dir="/tmp")  # tmp_path can exceed sun_path's 107 bytes
    handles = []

    def make(**overrides):
        fields = {
            "driver_name": "dra.example.com",
            "node_name": "node-1",
            "registry_dir": f"{sockets}/registry",
            "plugin_dir": f"{sockets}/plugins",
            "kubelet_endpoint_path": KUBELET_ENDPOINT,
            "devices": [DeviceSpec("dev-0"), DeviceSpec("dev-1")],
            **overrides,
        }
        handles.append(start(DriverConfig(**fields), tmp_path / "driver"))
        return handles[-1]

    yield make
    for handle in handles:
        handle.cleanup()
    shutil.rmtree(sockets, ignore_errors=True)


@pytest.fixture
def driver(make_driver):
    return make_driver()


@pytest.fixture
def kubelet(driver):
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as client:
        yield client


def test_get_info_reports_the_kubelets_view_and_versions_in_order(make_driver):
    driver = make_driver(services=["v1beta1.DRAPlugin", "v1.DRAPlugin"], health_service=True)
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        info = kubelet.get_info()

    assert os.path.basename(driver.config.registration_socket) == "dra.example.com-reg.sock"
    assert (info.type, info.name, info.endpoint) == ("DRAPlugin", "dra.example.com", KUBELET_ENDPOINT)
    assert list(info.supported_versions) == [
        "v1beta1.DRAPlugin",
        "v1.DRAPlugin",
        "v1.DRAResourceHealth",
        "v1alpha1.DRAResourceHealth",
    ]
    assert (driver.calls()[0].service, driver.calls()[0].method) == ("pluginregistration.Registration", "GetInfo")


def test_registration_notifications_are_recorded(driver, kubelet):
    kubelet.notify(False, "RegisterPlugin error -- plugin validation failed with err: nope")
    kubelet.notify(True)

    assert [(r.ok, r.error) for r in driver.registrations()] == [
        (False, "RegisterPlugin error -- plugin validation failed with err: nope"),
        (True, ""),
    ]
    assert driver.wait_for_registration(timeout=5).pid == driver.pid


def test_get_info_failure_only_n_times(driver, kubelet):
    driver.fail_get_info("not ready", code="UNAVAILABLE", times=1)

    with pytest.raises(grpc.RpcError) as err:
        kubelet.get_info()
    assert (err.value.code(), err.value.details()) == (grpc.StatusCode.UNAVAILABLE, "not ready")
    assert kubelet.get_info().name == "dra.example.com"
    assert [c.ok for c in driver.calls("GetInfo")] == [False, True]


def test_dra_service_stops_while_registrar_still_answers(driver, kubelet):
    driver.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=["dev-0"])
    driver.stop_dra_service()

    assert not os.path.exists(driver.config.service_socket)
    assert kubelet.get_info().endpoint == KUBELET_ENDPOINT
    with pytest.raises(grpc.RpcError) as err:
        kubelet.prepare([CLAIM], timeout=2)
    assert err.value.code() == grpc.StatusCode.UNAVAILABLE

    driver.start_dra_service()
    # A fresh channel: the old one sits in reconnect backoff after the failure.
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as again:
        assert again.prepare([CLAIM], timeout=10).claims["uid-1"].error == ""
    assert driver.status()["dra_service_running"] is True


def test_registrar_stops_and_starts_on_its_own(make_driver):
    driver = make_driver(register_on_start=False)  # upstream: service first, registration later
    assert not os.path.exists(driver.config.registration_socket)
    assert os.path.exists(driver.config.service_socket)

    driver.start_registrar()
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        assert kubelet.get_info().name == "dra.example.com"
    driver.stop_registrar()
    assert not os.path.exists(driver.config.registration_socket)
    assert driver.status()["dra_service_running"] is True


@pytest.mark.parametrize("api", ["v1", "v1alpha1"])
def test_health_stream_sends_the_full_list_on_every_push(make_driver, api):
    """Both versions the kubeletplugin helper serves by default (draplugin.go v0.37.2), each on its own service."""
    driver = make_driver(health_service=True)
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        stream = kubelet.watch_health(timeout=20, api=api)
        [watch] = driver.wait_for_call("NodeWatchResources", timeout=10)
        assert (watch.service, watch.done) == (f"{api}.DRAResourceHealth", False)

        assert driver.push_health({"dev-0": "Unhealthy"}, message="ECC errors") == 1
        first = next(stream)
        driver.push_health({"dev-1": "Healthy"})
        second = next(stream)
        stream.cancel()

    assert type(first).DESCRIPTOR.full_name == f"{api}.NodeWatchResourcesResponse"
    assert [(d.device.pool_name, d.device.device_name, d.health, d.message) for d in first.devices] == [
        ("node-1", "dev-0", health_pb2.UNHEALTHY, "ECC errors")
    ]
    assert [(d.device.device_name, d.health) for d in second.devices] == [
        ("dev-0", health_pb2.UNHEALTHY),
        ("dev-1", health_pb2.HEALTHY),
    ]
    assert second.devices[1].last_updated_time > 0


def test_a_partial_health_report_names_only_the_devices_pushed(make_driver):
    """A report may cover a subset of the driver's devices (kubeletplugin/health.go DeviceHealthReport)."""
    driver = make_driver(health_service=True)
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        stream = kubelet.watch_health(timeout=20)
        driver.wait_for_call("NodeWatchResources", timeout=10)
        driver.push_health({"dev-0": "Healthy", "dev-1": "Healthy"}, timeout_seconds=600)
        full = next(stream)
        driver.push_health({"dev-1": "Unhealthy"}, partial=True)
        partial = next(stream)
        stream.cancel()
    assert [(d.device.device_name, d.health_check_timeout_seconds) for d in full.devices] == [
        ("dev-0", 600),
        ("dev-1", 600),
    ]
    assert [(d.device.device_name, d.health) for d in partial.devices] == [("dev-1", health_pb2.UNHEALTHY)]


@pytest.mark.parametrize(("served", "missing"), [(["v1alpha1"], "v1"), (["v1"], "v1alpha1")])
def test_a_health_version_the_driver_does_not_serve_is_unimplemented(make_driver, served, missing):
    """A driver built before v1 (v1alpha1 alone), or with the helper's HealthV1alpha1(false) (v1 alone), advertises
    and serves that version only: the kubelet's choice between them is what the suites judge."""
    driver = make_driver(health_service=True, health_apis=served)
    assert driver.config.advertised_versions == ["v1.DRAPlugin", "v1beta1.DRAPlugin", f"{served[0]}.DRAResourceHealth"]
    kubelet = KubeletClient(driver.config.registration_socket, driver.config.service_socket)
    with kubelet, pytest.raises(grpc.RpcError) as refused:
        next(kubelet.watch_health(timeout=10, api=missing))
    assert (refused.value.code(), refused.value.details()) == (
        grpc.StatusCode.UNIMPLEMENTED,
        f"unknown service {missing}.DRAResourceHealth",
    )


@pytest.mark.parametrize("api", ["v1", "v1alpha1"])
def test_a_driver_without_health_declines_every_stream_as_the_helper_does(make_driver, api):
    """Pattern health-not-supported: advertised and served, every stream ends UNIMPLEMENTED with the kubeletplugin
    helper's ErrHealthNotSupported text (kubeletplugin/health.go, v0.37.2), and the call is logged."""
    driver = make_driver(health_service=True, patterns=["health-not-supported"])
    assert driver.config.advertised_versions[-2:] == ["v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"]
    kubelet = KubeletClient(driver.config.registration_socket, driver.config.service_socket)
    with kubelet, pytest.raises(grpc.RpcError) as refused:
        next(kubelet.watch_health(timeout=10, api=api))
    message = "device health reporting is not supported by this driver"
    assert (refused.value.code(), refused.value.details()) == (grpc.StatusCode.UNIMPLEMENTED, message)
    [call] = driver.calls("NodeWatchResources")
    assert (call.service, call.outcome(), call.error["message"]) == (
        f"{api}.DRAResourceHealth",
        "error UNIMPLEMENTED",
        message,
    )


def test_one_socket_serves_registration_and_dra_and_get_info_names_no_endpoint(make_driver):
    """Pattern dra-on-registration-socket: GetInfo's endpoint is empty (optional: the kubelet then uses the
    registration socket, operation_generator.go) and NodePrepareResources is answered there."""
    driver = make_driver(patterns=["dra-on-registration-socket"])
    socket = driver.config.registration_socket
    with KubeletClient(socket, socket) as kubelet:
        info = kubelet.get_info()
        answer = kubelet.prepare([])
    assert (info.endpoint, list(answer.claims)) == ("", [])
    assert not os.path.exists(driver.config.service_socket)
    assert driver.status()["dra_service_running"] is True
    [call] = driver.calls("NodePrepareResources")
    assert call.socket == os.path.basename(socket)


def test_a_service_the_driver_lacks_is_logged_and_answered_unimplemented(driver):
    """kubernetes#141855: the suites must see a kubelet calling the health service of a driver that never
    advertised it; gRPC's own answer would leave no trace in the call log."""
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        stream = kubelet.watch_health(timeout=10, api="v1alpha1")
        with pytest.raises(grpc.RpcError) as refused:
            next(stream)
    assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert refused.value.details() == "unknown service v1alpha1.DRAResourceHealth"
    [call] = driver.calls("NodeWatchResources")
    assert (call.service, call.outcome(), call.error["message"]) == (
        "v1alpha1.DRAResourceHealth",
        "error UNIMPLEMENTED",
        "unknown service v1alpha1.DRAResourceHealth",
    )


def test_taints_and_devices_bump_the_pool_generation(driver):
    first = driver.set_taints("dev-0", [{"key": "example.com/bad", "effect": "NoExecute"}])
    second = driver.set_devices([DeviceSpec("dev-7")])

    assert (first["published"], first["generation"], second["generation"]) == (False, 1, 2)
    assert [d["name"] for d in driver.devices()] == ["dev-7"]


def test_sigkill_leaves_call_log_prepared_set_and_stale_sockets(driver, kubelet):
    driver.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=["dev-0"])
    kubelet.prepare([CLAIM])
    old_pid = driver.pid

    driver.kill()

    assert not driver.is_running()
    assert [c.method for c in driver.calls()] == ["NodePrepareResources"]
    assert set(driver.prepared()) == {"uid-1"}  # from the state file
    assert os.path.exists(driver.config.registration_socket)  # like a crashed plugin

    driver.restart()
    assert driver.pid != old_pid
    assert set(driver.prepared()) == {"uid-1"}
    kubelet.unprepare([CLAIM])
    assert [c.pid for c in driver.calls()] == [old_pid, driver.pid]


def test_a_crash_fault_kills_the_driver_in_the_middle_of_prepare(driver, kubelet):
    driver.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=["dev-0"])
    pid = driver.pid
    driver.crash("NodePrepareResources", claim_uid="uid-1")

    with pytest.raises(grpc.RpcError) as err:
        kubelet.prepare([CLAIM], timeout=10)

    assert err.value.code() == grpc.StatusCode.UNAVAILABLE
    assert driver.stop() == -signal.SIGKILL
    assert [(c.method, c.done, c.pid) for c in driver.calls()] == [("NodePrepareResources", False, pid)]
    assert driver.prepared() == {}
    driver.respawn()
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as again:
        assert again.prepare([CLAIM], timeout=10).claims["uid-1"].error == ""  # the fault died with the process
    assert [(c.seq, c.ok) for c in driver.calls()] == [(1, False), (2, True)]


def test_sigterm_removes_sockets_and_cleanup_is_idempotent(driver):
    config = driver.config
    assert all(os.path.exists(p) for p in config.sockets())

    os.kill(driver.pid, signal.SIGTERM)  # the driver itself, not the handle, must clean up
    assert driver.stop(timeout=10) == 0

    assert [p for p in config.sockets() if os.path.exists(p)] == []
    driver.cleanup()
    driver.cleanup()
    assert not driver.is_running()


def test_a_driver_that_cannot_start_is_reported_with_its_log(make_driver, tmp_path):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")

    with pytest.raises(FakeStartError) as err:
        make_driver(plugin_dir=str(blocker))  # the driver cannot create its socket directory

    assert "exited with code 1 before it was ready" in str(err.value)
    assert "FileExistsError" in str(err.value)  # the traceback from the driver's log
