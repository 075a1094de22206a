"""The fake device plugin registers like a real one: serve first, record the kubelet's verdict, and come
back by itself after a kubelet restart (unless registration is held)."""

import os

from device_conformance.fakes.common.calls import REGISTER
from device_conformance.fakes.kubelet_stub import KubeletStub

RESOURCE = "example.com/dev"


def test_registration_succeeds_and_happens_after_the_plugin_serves(kubelet_stub, start_plugin):
    plugin = start_plugin()

    registration = kubelet_stub.wait_for_registration()
    assert (registration.version, registration.endpoint, registration.resource_name) == (
        "v1beta1",
        "fake.sock",
        RESOURCE,
    )
    [record] = plugin.registrations()
    assert record.ok and record.reason == "start"
    register, options = plugin.calls(kind=None)[:2]
    # The kubelet dials back inside Register, so GetDevicePluginOptions runs within it.
    assert (register.kind, options.method) == (REGISTER, "GetDevicePluginOptions")
    assert register.started_mono < options.started_mono < register.ended_mono


def test_wrong_api_version_is_rejected_and_the_error_recorded(kubelet_stub, start_plugin):
    plugin = start_plugin(api_version="v1alpha")

    [record] = plugin.registrations()
    assert not record.ok
    assert (
        record.error == 'requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]'
    )
    assert kubelet_stub.endpoints == {}


def test_invalid_resource_name_is_rejected_and_the_error_recorded(kubelet_stub, start_plugin):
    plugin = start_plugin(resource_name="dev")

    [record] = plugin.registrations()
    assert (record.ok, record.error) == (False, 'the ResourceName "dev" is invalid')
    assert plugin.calls() == []  # rejected before the kubelet dialled back


def test_options_failure_fails_registration_and_no_stream_starts(kubelet_stub, start_plugin):
    plugin = start_plugin(register_on_start=False)
    plugin.fail("GetDevicePluginOptions", "INTERNAL", "options are broken")

    record = plugin.register()

    assert not record.ok
    assert record.error == "failed to get device plugin options: rpc error: code = Internal desc = options are broken"
    assert [c.method for c in plugin.calls()] == ["GetDevicePluginOptions"]


def test_registers_once_the_kubelet_appears(plugin_dirs, start_plugin):
    plugin = start_plugin()  # no kubelet yet: nothing to register with
    assert plugin.registrations() == []

    with KubeletStub(str(plugin_dirs / "dp")) as stub:
        stub.wait_for_registration()
        assert plugin.wait_for_registration().reason == "kubelet.sock re-created"


def test_reregisters_by_itself_after_a_kubelet_restart(kubelet_stub, start_plugin):
    plugin = start_plugin()
    kubelet_stub.wait_for_registration()

    kubelet_stub.restart()  # deletes fake.sock, re-creates kubelet.sock

    assert plugin.wait_for_registration(2).reason in ("plugin socket deleted", "kubelet.sock re-created")
    kubelet_stub.endpoint(RESOURCE).wait_for_devices("both listed", lambda d: set(d) == {"dev-1", "dev-2"})
    assert [r.ok for r in plugin.registrations()] == [True, True]
    assert len(kubelet_stub.registrations) == 2


def test_held_registration_is_made_only_when_released(kubelet_stub, start_plugin):
    plugin = start_plugin()
    plugin.hold_registration(True)

    kubelet_stub.restart()
    socket = plugin.config.socket_path()
    plugin.wait_for_status(
        "a registration owed while held, the socket served again",
        lambda s: s["registration_owed"] is not None and os.path.exists(socket),
    )

    assert len(kubelet_stub.registrations) == 1
    plugin.hold_registration(False)
    kubelet_stub.wait_for_registration(2)
    assert plugin.registrations()[-1].reason.startswith("released")


def test_hold_from_the_start_registers_nothing_until_released(kubelet_stub, start_plugin):
    plugin = start_plugin(hold_registration=True)  # upstream sample plugin's REGISTER_CONTROL_FILE

    assert plugin.status()["registration_owed"] == "start"
    assert (kubelet_stub.registrations, plugin.registrations()) == ([], [])
    plugin.hold_registration(False)

    assert kubelet_stub.wait_for_registration().endpoint == "fake.sock"
    assert plugin.registrations()[0].reason == "released (start)"


def test_reregister_on_a_new_socket_name(kubelet_stub, start_plugin):
    plugin = start_plugin()

    record = plugin.register(socket_name="fake-2.sock")

    assert record.ok and record.socket_name == "fake-2.sock"
    assert kubelet_stub.wait_for_registration(2).endpoint == "fake-2.sock"
    kubelet_stub.endpoint(RESOURCE).wait_for_devices("listed on the new socket", lambda d: len(d) == 2)
    plugin.stop_serving("fake.sock")
    assert not os.path.exists(plugin.config.socket_path("fake.sock"))
    assert os.path.exists(plugin.config.socket_path("fake-2.sock"))
