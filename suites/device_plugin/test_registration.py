"""Registration: what the kubelet accepts, what it rejects, and what the node then reports."""

import uuid

import pytest

from device_conformance.kube import nodes
from device_conformance.wait import kube as wait
from device_conformance.wait.core import stays

pytestmark = pytest.mark.deviceplugin

COUNT_TIMEOUT = 15
ABSENT_FOR = 3


def _never_appears(kube, node, resource):
    def probe():
        seen = nodes.resource_counts(kube, node.name, resource)
        return None if seen == (None, None) else f"node reports capacity/allocatable {seen}"

    stays(probe, what=f"{resource} to stay absent from node {node.name}", duration=ABSENT_FOR)


def test_registered_plugin_devices_become_capacity_and_allocatable(kube, node, device_plugin):
    """An accepted Register makes the kubelet dial back, ask for options and list devices: N/N on the node."""
    plugin = device_plugin(devices=("dev-0", "dev-1", "dev-2"))
    reg = plugin.wait_for_registration()
    assert reg.ok and reg.error == ""
    wait.for_resource_counts(kube, node.name, plugin.config.resource_name, 3, 3, timeout=COUNT_TIMEOUT)
    methods = [c.method for c in plugin.calls()]
    assert "GetDevicePluginOptions" in methods
    assert "ListAndWatch" in methods


def test_wrong_api_version_is_rejected_with_the_kubelets_reason(kube, node, device_plugin):
    """Register with an unsupported version fails; the kubelet says why and never lists the devices."""
    plugin = device_plugin(api_version="v1alpha9")
    reg = plugin.wait_for_registration(ok=False)
    assert reg.error_code == "UNKNOWN", reg
    assert "v1alpha9" in reg.error and "not supported" in reg.error, reg.error
    _never_appears(kube, node, plugin.config.resource_name)
    assert plugin.calls("ListAndWatch") == []


def test_invalid_resource_name_is_rejected(kube, node, device_plugin):
    """A resource name that is not an extended resource name (no domain) is refused at Register."""
    name = f"dc-{uuid.uuid4().hex[:8]}-nodomain"
    plugin = device_plugin(resource=name)
    reg = plugin.wait_for_registration(ok=False)
    assert name in reg.error and "invalid" in reg.error.lower(), reg.error
    _never_appears(kube, node, name)
    assert plugin.calls("ListAndWatch") == []


def test_failing_get_device_plugin_options_fails_the_registration(kube, node, device_plugin):
    """The kubelet dials the plugin back and calls GetDevicePluginOptions inside Register; when that
    fails, Register itself fails with the plugin's error text, no ListAndWatch, the resource never appears."""
    plugin = device_plugin(hold_registration=True)
    plugin.fail("GetDevicePluginOptions", "INTERNAL", "fake options failure")
    plugin.hold_registration(False)
    reg = plugin.wait_for_registration(ok=False)
    assert "failed to get device plugin options" in reg.error and "fake options failure" in reg.error, reg.error
    options = plugin.calls("GetDevicePluginOptions")
    assert len(options) == 1 and options[0].error and options[0].error["code"] == "INTERNAL"
    _never_appears(kube, node, plugin.config.resource_name)
    assert plugin.calls("ListAndWatch") == []
