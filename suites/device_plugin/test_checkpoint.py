"""The device manager's checkpoint (kubelet_internal_checkpoint): what the kubelet writes, and what it
does on restart with a forged pre-1.20 file, a corrupt one, or none. Outcomes that changed between
versions come from expectations/deviceplugin.py. Count waits use DEVICE_COUNTS_AFTER_RESTART, the first
registration's too."""

import subprocess
import sys

import pytest
from device_conformance.fixtures.device_plugins import DEVICES_ENV

from device_conformance import timeouts
from device_conformance.expectations.behaviour import outcome
from device_conformance.expectations.deviceplugin import (
    ADMITTED_WITHOUT_DEVICES,
    CHECKPOINT_READ_WARNING,
    CORRUPT_CHECKPOINT_ON_RESTART,
    EXTENDED_RESOURCES_NOT_RESET,
    REJECTED_UNTIL_REGISTERED,
    V1_CHECKPOINT_ON_RESTART,
)
from device_conformance.kube import pods
from device_conformance.kubelet_state import allocresp, devicemanager
from device_conformance.wait import kube as wait
from device_conformance.wait.core import Pending, until

pytestmark = [pytest.mark.deviceplugin, pytest.mark.checkpoint]

CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def _holder(register_plugin, pod_factory):
    """A registered plugin (2 devices) and a running pod holding one of them (a checkpoint with an entry):
    (plugin, pod, the pod's device IDs)."""
    plugin = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    pod = pod_factory("holder", ["sleep", "86400"], resources={plugin.config.resource_name: 1})
    pod.wait_running()
    return plugin, pod, pod.devices(plugin.config.resource_name)


def test_kubelets_checkpoint_verifies_and_records_the_allocation(node, register_plugin, pod_factory):
    """Our codec reads what the real kubelet wrote, recomputes its checksum exactly, and finds the
    pod's allocation, the Allocate response and the registered devices in it; so does the CLI."""
    plugin, pod, device = _holder(register_plugin, pod_factory)
    resource = plugin.config.resource_name
    parsed = devicemanager.parse(node.read_file(CHECKPOINT))
    assert parsed.valid and parsed.format == "v2", parsed.reason
    assert parsed.stored_checksum == parsed.computed_checksum
    entries = [e for e in parsed.checkpoint.entries or [] if e.pod_uid == pod.uid]
    assert [(e.container_name, e.resource_name, e.devices()) for e in entries] == [("main", resource, device)]
    assert allocresp.decode_alloc_resp(entries[0].alloc_resp).envs == {DEVICES_ENV: device[0]}
    assert sorted(parsed.checkpoint.registered_devices[resource]) == ["dev-0", "dev-1"]

    cli = [sys.executable, "-m", "device_conformance.cli", "checkpoint", "verify", str(node.host_path(CHECKPOINT))]
    result = subprocess.run(cli, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert str(parsed.computed_checksum) in result.stdout


def _restart_on(node, plugin, forge):
    """Stop the kubelet, rewrite its checkpoint with forge(bytes) (None deletes it), start it again,
    with the plugin holding back its registration; returns the kubelet log mark taken before the start."""
    plugin.hold_registration(True)
    with node.kubelet.stopped():
        forged = forge(node.read_file(CHECKPOINT))
        if forged is None:
            node.delete_file(CHECKPOINT)
        else:
            node.write_file(CHECKPOINT, forged)
        mark = node.kubelet.log_mark()
    return mark


def _warning_logged(node, mark):
    def probe():
        log = node.kubelet.log_since(mark)
        return True if CHECKPOINT_READ_WARNING in log else Pending("no checkpoint warning in the kubelet log yet")

    until(probe, what=f"the kubelet to log {CHECKPOINT_READ_WARNING!r}", timeout=timeouts.KUBELET_LOG_LINE)


def _assert_new_pod_outcome(node, pod_factory, plugin, expected):
    resource = plugin.config.resource_name
    pod = pod_factory("after", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    if expected == REJECTED_UNTIL_REGISTERED:
        failed = pod.wait_admission_failure()
        assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
    else:
        assert expected == ADMITTED_WITHOUT_DEVICES, expected
        # The state is lost: the node still offers the devices, and the pod runs without any.
        pod.wait_running()
        entry = pod.wait_podresources()
        assert entry.container("main").device_ids == {}, entry
    assert len(plugin.calls("Allocate")) == 1, "the plugin must not be asked while it is not registered"
    # Make room for the recovery check: the pod above counts against the devices either way.
    pod.force_delete()
    pod.wait_gone(timeouts.FORCE_DELETED_POD_GONE)


def _recovers(node, pod_factory, node_resource, plugin):
    """Registration heals the node: counts back, new pods get devices, a valid v2 file is written."""
    resource = plugin.config.resource_name
    plugin.hold_registration(False)
    node_resource(resource).wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    pod = pod_factory("healed", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    assert len(plugin.calls("Allocate")) == 2
    parsed = devicemanager.parse(node.read_file(CHECKPOINT))
    assert parsed.valid and parsed.format == "v2", parsed.reason


@pytest.mark.disruptive
@pytest.mark.scenario("DM1")
def test_forged_pre_1_20_checkpoint_on_restart(kube, node, pod_factory, node_resource, register_plugin, kube_version):
    """Upstream DM1 / bug 3 (#102880): the same allocation written in the pre-1.20 "v1" format with a
    correct checksum. 1.23-1.29 recover it and reject pods until the plugin registers; 1.30+ dropped
    the v1 reader (#123398): warning, state lost, the node keeps offering the devices."""
    plugin, _, _ = _holder(register_plugin, pod_factory)
    expected = outcome(V1_CHECKPOINT_ON_RESTART, kube_version)

    def to_v1(data):
        checkpoint = devicemanager.parse(data).checkpoint
        checkpoint.entries = [entry.as_v1() for entry in checkpoint.entries or []]
        forged = devicemanager.encode_v1(checkpoint)
        assert devicemanager.parse(forged).format == "v1" and devicemanager.parse(forged).v1_ok
        return forged

    mark = _restart_on(node, plugin, to_v1)
    wait.for_node_ready(kube, node.name)
    if expected == ADMITTED_WITHOUT_DEVICES:
        _warning_logged(node, mark)
    _assert_new_pod_outcome(node, pod_factory, plugin, expected)
    _recovers(node, pod_factory, node_resource, plugin)


@pytest.mark.disruptive
def test_checkpoint_with_wrong_checksum_on_restart(
    kube, node, pod_factory, node_resource, register_plugin, kube_version
):
    """A checksum mismatch is not fatal: the kubelet logs it and starts with empty device state, so
    the node keeps offering the devices of a plugin that has not registered (pkg/kubelet/cm/devicemanager/
    manager.go Start: a failed checkpoint read is only logged)."""
    plugin, _, _ = _holder(register_plugin, pod_factory)
    expected = outcome(CORRUPT_CHECKPOINT_ON_RESTART, kube_version)
    mark = _restart_on(node, plugin, lambda data: devicemanager.corrupt(data, "checksum"))
    wait.for_node_ready(kube, node.name)
    _warning_logged(node, mark)
    if expected == ADMITTED_WITHOUT_DEVICES:
        node_resource(plugin.config.resource_name).wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    _assert_new_pod_outcome(node, pod_factory, plugin, expected)
    _recovers(node, pod_factory, node_resource, plugin)


@pytest.mark.disruptive
@pytest.mark.scenario("DM-U6")
@pytest.mark.known_bug(EXTENDED_RESOURCES_NOT_RESET)
def test_missing_checkpoint_resets_the_extended_resource(kube, node, pod_factory, node_resource, register_plugin):
    """No checkpoint at start means a recreated node to the kubelet (ShouldResetExtendedResourceCapacity,
    PR #77699): device capacity and allocatable drop to 0 until the plugin registers."""
    plugin, _, _ = _holder(register_plugin, pod_factory)
    _restart_on(node, plugin, lambda data: None)
    wait.for_node_ready(kube, node.name)
    # The reset happens when the kubelet registers the node, before it reports Ready.
    node_resource(plugin.config.resource_name).wait_counts(0, 0, timeouts.EXTENDED_RESOURCE_RESET)
    _recovers(node, pod_factory, node_resource, plugin)
