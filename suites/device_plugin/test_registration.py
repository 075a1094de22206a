"""Registration: what the kubelet accepts, what it rejects, and what the node then reports."""

import uuid

import pytest

pytestmark = pytest.mark.deviceplugin

ABSENT_FOR = 3  # how long a rejected resource must stay off the node


def test_registered_plugin_devices_become_capacity_and_allocatable(node_resource, device_plugin):
    """An accepted Register makes the kubelet dial back, ask for options and list devices: N/N on the node."""
    plugin = device_plugin(devices=("dev-0", "dev-1", "dev-2"))
    reg = plugin.wait_for_registration()
    assert reg.ok and reg.error == "", f"registration refused: {reg.error_code} {reg.error}"
    node_resource(plugin.config.resource_name).wait_counts(3, 3)
    methods = [c.method for c in plugin.calls()]
    assert methods == ["GetDevicePluginOptions", "ListAndWatch"], (
        f"expected exactly one GetDevicePluginOptions and one ListAndWatch stream (no PreStartContainer or "
        f"GetPreferredAllocation: the plugin does not advertise them); the plugin saw {methods}"
    )


def test_wrong_api_version_is_rejected_with_the_kubelets_reason(node_resource, device_plugin):
    """Register with an unsupported version fails; the kubelet says why and never lists the devices."""
    plugin = device_plugin(api_version="v1alpha9")
    reg = plugin.wait_for_registration(ok=False)
    assert reg.error_code == "UNKNOWN", reg
    assert "v1alpha9" in reg.error and "not supported" in reg.error, reg.error
    node_resource(plugin.config.resource_name).stays_at(None, None, ABSENT_FOR)
    methods = [c.method for c in plugin.calls()]
    assert methods == [], f"the kubelet must not dial back a plugin it rejected; it called {methods}"


def test_invalid_resource_name_is_rejected(node_resource, device_plugin):
    """A resource name that is not an extended resource name (no domain) is refused at Register."""
    name = f"dc-{uuid.uuid4().hex[:8]}-nodomain"
    plugin = device_plugin(resource=name)
    reg = plugin.wait_for_registration(ok=False)
    assert name in reg.error and "invalid" in reg.error.lower(), reg.error
    node_resource(name).stays_at(None, None, ABSENT_FOR)
    methods = [c.method for c in plugin.calls()]
    assert methods == [], f"the kubelet must not dial back a plugin it rejected; it called {methods}"


@pytest.mark.scenario("DF1")
def test_failing_get_device_plugin_options_fails_the_registration(node_resource, device_plugin):
    """The kubelet dials the plugin back and calls GetDevicePluginOptions inside Register; when that
    fails, Register itself fails with the plugin's error text, no ListAndWatch, the resource never appears."""
    plugin = device_plugin(hold_registration=True)
    plugin.fail("GetDevicePluginOptions", "INTERNAL", "fake options failure")
    plugin.hold_registration(False)
    reg = plugin.wait_for_registration(ok=False)
    assert "failed to get device plugin options" in reg.error and "fake options failure" in reg.error, reg.error
    node_resource(plugin.config.resource_name).stays_at(None, None, ABSENT_FOR)
    seen = [(c.method, (c.error or {}).get("code")) for c in plugin.calls()]
    assert seen == [("GetDevicePluginOptions", "INTERNAL")], (
        f"expected one failed GetDevicePluginOptions and no call after it; the plugin saw {seen}"
    )
