"""Registration: what the kubelet accepts, what it rejects, and what the node then reports.

A rejected plugin must stay rejected: its resource never appears on the node and the kubelet never calls
it again, for upstream's minute (DEVICE_PLUGIN_UPDATE_WINDOW, device_plugin_failures_test.go). The three
rejected plugins (wrong API version, invalid resource name, failing GetDevicePluginOptions) each have
their own module fixture with a background watch for that minute; the `overlapping` marker starts them
together before the module's first test, so the minute runs while the module's other tests do. Each
rejection test checks the kubelet's answer at once and collects its watch.
"""

import os
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from device_conformance.fixtures.cluster import node_with_access
from device_conformance.fixtures.device_plugins import allocations, serving_plugin

from device_conformance.framework import (
    REFUSED_REREGISTRATION_DROPS_LIVE_CLIENT,
    REGISTER_ON_A_CONNECTED_SOCKET,
    REGISTRATION_CALLS,
    REGISTRATION_REFUSED_ALREADY_CONNECTED,
    DevicePluginHandle,
    NodeResource,
    Watch,
    outcome,
    timeouts,
    watch,
)

# The rejected plugins whose one-minute windows overlap, in the order they start.
pytestmark = [
    pytest.mark.deviceplugin,
    pytest.mark.overlapping(
        "plugin_with_unsupported_api_version",
        "plugin_with_invalid_resource_name",
        "plugin_failing_get_device_plugin_options",
    ),
]

STEADY_FOR = 5  # seconds the counts must hold after a change that must not change them
WRONG_VERSION = "v1alpha9"
# The kubelet's texts (pkg/kubelet/cm/devicemanager/plugin/v1beta1/api.go errUnsupportedVersion and
# errInvalidResourceName; manager.go PluginConnected), as Register's gRPC error message.
UNSUPPORTED_VERSION = (
    f'requested API version "{WRONG_VERSION}" is not supported by kubelet. Supported version is ["v1beta1"]'
)
INVALID_NAME = 'the ResourceName "{}" is invalid'
OPTIONS_FAILED = "failed to get device plugin options: rpc error: code = Internal desc = fake options failure"
ALREADY_CONNECTED = "device plugin already connected: "


@dataclass
class Rejected:
    plugin: DevicePluginHandle
    stays_rejected: Watch


def _rejected_watch(kube, node_name: str, plugin: DevicePluginHandle, resource: str, calls: list) -> Watch:
    """For the window: the resource is absent from node status and the plugin's call log is exactly `calls`
    ((method, error code) pairs)."""
    counts = NodeResource(kube, node_name, resource)

    def broken() -> str | None:
        seen = counts.counts()
        if seen != (None, None):
            return f"node {node_name} reports {resource} as capacity/allocatable {seen}"
        log = [(c.method, (c.error or {}).get("code")) for c in plugin.calls()]
        return None if log == calls else f"the plugin's call log is {log}, expected {calls}"

    what = f"{resource} to stay off the node and {plugin.name} to get exactly the calls {calls}"
    return watch(broken, what=what, duration=timeouts.DEVICE_PLUGIN_UPDATE_WINDOW)


@contextmanager
def _refused(kube, node_name: str, plugin: DevicePluginHandle, calls: list) -> Iterator[Rejected]:
    """The plugin once the kubelet refused its Register, watched for the minute (_rejected_watch)."""
    plugin.wait_for_registration(ok=False)
    started = _rejected_watch(kube, node_name, plugin, plugin.config.resource_name, calls)
    try:
        yield Rejected(plugin, started)
    finally:
        started.cancel()


@pytest.fixture(scope="module")
def plugin_with_unsupported_api_version(cluster, kube, tmp_path_factory) -> Iterator[Rejected]:
    """A plugin registering with API version v1alpha9, refused by the kubelet and watched for the minute."""
    node = node_with_access(cluster)
    with (
        serving_plugin(node, tmp_path_factory, api_version=WRONG_VERSION) as plugin,
        _refused(kube, node.name, plugin, []) as rejected,
    ):
        yield rejected


@pytest.fixture(scope="module")
def plugin_with_invalid_resource_name(cluster, kube, tmp_path_factory) -> Iterator[Rejected]:
    """A plugin registering a resource name without a domain, refused by the kubelet and watched for the minute."""
    node = node_with_access(cluster)
    name = f"dc-{uuid.uuid4().hex[:8]}-nodomain"
    with (
        serving_plugin(node, tmp_path_factory, resource=name) as plugin,
        _refused(kube, node.name, plugin, []) as rejected,
    ):
        yield rejected


@pytest.fixture(scope="module")
def plugin_failing_get_device_plugin_options(cluster, kube, tmp_path_factory) -> Iterator[Rejected]:
    """A plugin whose GetDevicePluginOptions fails inside Register, refused and watched for the minute."""
    node = node_with_access(cluster)
    with serving_plugin(node, tmp_path_factory, hold_registration=True) as plugin:
        plugin.fail("GetDevicePluginOptions", "INTERNAL", "fake options failure")
        plugin.hold_registration(False)
        with _refused(kube, node.name, plugin, [("GetDevicePluginOptions", "INTERNAL")]) as rejected:
            yield rejected


def test_registered_plugin_devices_become_capacity_and_allocatable(node_resource, device_plugin):
    """An accepted Register makes the kubelet dial back, ask for options and list devices: N/N on the node."""
    plugin = device_plugin(devices=("dev-0", "dev-1", "dev-2"))
    reg = plugin.wait_for_registration()
    assert reg.ok and reg.error == "", f"registration refused: {reg.error_code} {reg.error}"
    node_resource(plugin.config.resource_name).wait_counts(3, 3)
    methods = [c.method for c in plugin.calls()]
    assert methods == REGISTRATION_CALLS, (
        f"expected exactly one GetDevicePluginOptions and one ListAndWatch stream (no PreStartContainer or "
        f"GetPreferredAllocation: the plugin does not advertise them); the plugin saw {methods}"
    )


@pytest.mark.since("1.37", "per-socket device plugin endpoints (ManagerImpl.endpointStore, kubernetes#135437)")
@pytest.mark.scenario("DM-U8")
def test_second_registration_on_the_same_socket_is_refused_and_a_survivor_serves(
    pod_factory, node_resource, device_plugin, register_plugin
):
    """Registering again on a socket the kubelet is connected to is refused with "device plugin already
    connected: <socket>" after one more GetDevicePluginOptions, and no second stream; the first
    connection goes on serving. A second instance on its own socket is accepted; when the first one
    stops, the survivor serves the resource (counts kept, the next pod's Allocate goes to it)."""
    first = register_plugin()
    resource = first.config.resource_name
    counts = node_resource(resource)
    again = first.register()
    assert not again.ok and again.error.startswith(ALREADY_CONNECTED), (
        f"a second Register on {first.config.socket_name} must be refused with {ALREADY_CONNECTED!r}<socket>; "
        f"the kubelet answered ok={again.ok} {again.error!r}"
    )
    assert again.error.endswith("/" + first.config.socket_name), again.error
    methods = [c.method for c in first.calls()]
    assert methods == [*REGISTRATION_CALLS, "GetDevicePluginOptions"], (
        f"the refused registration gets one GetDevicePluginOptions and no second stream; the plugin saw {methods}"
    )
    counts.stays_at(2, 2, STEADY_FOR)
    held = pod_factory("held", ["sleep", "86400"], resources={resource: 1})
    held.wait_running()
    [one] = allocations(first, 1)

    survivor = device_plugin(resource=resource, devices=("dev-0", "dev-1"))
    assert survivor.wait_for_registration().ok
    first.stop()
    counts.stays_at(2, 2, STEADY_FOR)
    served = pod_factory("served", ["sleep", "86400"], resources={resource: 1})
    served.wait_running()
    [two] = allocations(survivor, 1)
    assert sorted(one + two) == ["dev-0", "dev-1"], f"the pods got {one} and {two}"
    allocations(first, 1)  # nothing more for the stopped first instance


@pytest.mark.since("1.28", "Register on a connected socket, read from module source v1.28.15 on")
@pytest.mark.scenario("DM-U8")
@pytest.mark.known_bug(REFUSED_REREGISTRATION_DROPS_LIVE_CLIENT)
def test_late_disconnect_of_a_reused_socket_frees_the_socket(
    node_resource, device_plugin, register_plugin, shows_known_bug, kube_version
):
    """A new instance taking over the socket path of a frozen one is refused from 1.37 ("device plugin
    already connected": the old connection is still there). When the old process dies at last, its
    disconnect is the resource's last one: every device goes unhealthy (capacity kept, allocatable 0), and
    the new instance serving that socket can register and bring the devices back. On 1.37.1 the refused
    Register dropped the live connection's client, so the late disconnect is never processed: the devices
    stay allocatable with no plugin behind them and the socket stays "already connected". Before 1.37 the
    takeover is accepted (REGISTER_ON_A_CONNECTED_SOCKET) and, once the old process is dead, the socket
    takes a Register again and serves: what kubernetes#135437's regression broke."""
    refused = outcome(REGISTER_ON_A_CONNECTED_SOCKET, kube_version) == REGISTRATION_REFUSED_ALREADY_CONNECTED
    old = register_plugin()
    resource = old.config.resource_name
    counts = node_resource(resource)
    new = device_plugin(resource=resource, devices=("dev-0", "dev-1"), register_on_start=False)
    os.kill(old.pid, signal.SIGSTOP)  # alive to the kubelet (its stream stays open), silent to everyone
    try:
        reg = new.register(socket_name=old.config.socket_name)
        if refused:
            assert not reg.ok and reg.error.startswith(ALREADY_CONNECTED), (
                f"taking over the socket of a live connection must be refused; the kubelet answered {reg}"
            )
            assert reg.error.endswith("/" + old.config.socket_name), reg.error
        else:
            assert reg.ok, f"before 1.37 a Register on a connected socket replaces the connection; got {reg}"
            new.wait_for_status("the kubelet's ListAndWatch stream", lambda status: status["open_streams"] == 1)
    finally:
        old.kill()
    methods = [c.method for c in new.calls()]
    expected = ["GetDevicePluginOptions"] if refused else REGISTRATION_CALLS
    assert methods == expected, f"the {'refused' if refused else 'accepted'} new instance got calls {methods}"
    with shows_known_bug(REFUSED_REREGISTRATION_DROPS_LIVE_CLIENT):
        if refused:
            counts.wait_counts(2, 0, timeouts.DEVICE_COUNTS_AFTER_PLUGIN_KILL)
        again = new.register()
        assert again.ok, f"the new instance's registration after the old one died was refused: {again.error}"
        counts.wait_counts(2, 2)


@pytest.mark.since("1.37", "per-socket device plugin endpoints (ManagerImpl.endpointStore, kubernetes#135437)")
@pytest.mark.scenario("DP-M3")
def test_second_instance_removed_while_the_first_is_alive_changes_nothing(
    pod_factory, node_resource, device_plugin, register_plugin
):
    """Upstream "DP2 changed its mind": a second instance registers for the resource and goes away while
    the first is alive; the counts stay and the next pod is served by the first instance."""
    first = register_plugin()
    resource = first.config.resource_name
    counts = node_resource(resource)
    second = device_plugin(resource=resource, devices=("dev-0", "dev-1"))
    assert second.wait_for_registration().ok
    second.stop()
    counts.stays_at(2, 2, STEADY_FOR)
    pod = pod_factory("served", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [granted] = allocations(first, 1)
    listed = sorted(pod.devices(resource))  # podresources lists a set
    assert listed == sorted(granted), f"podresources lists {listed}, the first instance's Allocate got {granted}"
    assert [c.method for c in second.calls()] == REGISTRATION_CALLS, (
        f"the removed instance got calls after registering: {[c.summary() for c in second.calls()]}"
    )


def test_wrong_api_version_is_rejected_with_the_kubelets_reason(plugin_with_unsupported_api_version):
    """Register with an unsupported version fails with the kubelet's text; for a minute the resource
    never appears and the kubelet never dials the plugin."""
    reg = plugin_with_unsupported_api_version.plugin.registrations()[0]
    assert (reg.error_code, reg.error) == ("UNKNOWN", UNSUPPORTED_VERSION), (reg.error_code, reg.error)
    plugin_with_unsupported_api_version.stays_rejected.holds()


def test_invalid_resource_name_is_rejected(plugin_with_invalid_resource_name):
    """A resource name that is not an extended resource name (no domain) is refused at Register with the
    kubelet's text; for a minute the resource never appears and the kubelet never dials the plugin."""
    plugin = plugin_with_invalid_resource_name.plugin
    reg = plugin.registrations()[0]
    assert reg.error == INVALID_NAME.format(plugin.config.resource_name), reg.error
    plugin_with_invalid_resource_name.stays_rejected.holds()


@pytest.mark.scenario("DF1")
def test_failing_get_device_plugin_options_fails_the_registration(plugin_failing_get_device_plugin_options):
    """The kubelet dials the plugin back and calls GetDevicePluginOptions inside Register; when that
    fails, Register fails with the plugin's error text; for a minute: no ListAndWatch, no other call, the
    resource never appears."""
    reg = plugin_failing_get_device_plugin_options.plugin.registrations()[0]
    assert reg.error == OPTIONS_FAILED, reg.error
    plugin_failing_get_device_plugin_options.stays_rejected.holds()
