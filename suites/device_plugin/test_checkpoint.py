"""The device manager's checkpoint (kubelet_internal_checkpoint): what the kubelet writes, and what it
does on restart with a forged pre-1.20 file, a corrupt one, or none. Outcomes that changed between
versions come from expectations/deviceplugin.py."""

import subprocess
import sys

import pytest

from device_conformance.expectations.behaviour import outcome
from device_conformance.expectations.deviceplugin import (
    ADMITTED_WITHOUT_DEVICES,
    CHECKPOINT_READ_WARNING,
    CORRUPT_CHECKPOINT_ON_RESTART,
    EXTENDED_RESOURCES_NOT_RESET,
    REJECTED_UNTIL_REGISTERED,
    V1_CHECKPOINT_ON_RESTART,
)
from device_conformance.fakes.device_plugin import AllocateConfig
from device_conformance.kube import pods
from device_conformance.kubelet_state import allocresp, devicemanager
from device_conformance.wait import kube as wait
from device_conformance.wait import podresources as wait_podresources
from device_conformance.wait.core import Pending, until

pytestmark = [pytest.mark.deviceplugin, pytest.mark.checkpoint]

CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
COUNT_TIMEOUT = 30
POD_TIMEOUT = 60
RESET_TIMEOUT = 10


def _podresources_socket(node):
    return str(node.host_path("/var/lib/kubelet/pod-resources/kubelet.sock"))


@pytest.fixture
def allocated(kube, node, namespace, make_pod, device_plugin):
    """A registered plugin (2 devices) and a running pod holding one of them: a checkpoint with an entry."""
    plugin = device_plugin(devices=("dev-0", "dev-1"), allocate=AllocateConfig(envs={"DC_DEVICES": "{ids}"}))
    resource = plugin.config.resource_name
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("holder", ["sleep", "86400"], resources={resource: 1})
    running = wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    device = wait_podresources.device_ids(_podresources_socket(node), namespace, pod.metadata.name, resource)
    return plugin, resource, running, device


def test_kubelets_checkpoint_verifies_and_records_the_allocation(node, allocated):
    """Our codec reads what the real kubelet wrote, recomputes its checksum exactly, and finds the
    pod's allocation, the Allocate response and the registered devices in it; so does the CLI."""
    _, resource, pod, device = allocated
    parsed = devicemanager.parse(node.read_file(CHECKPOINT))
    assert parsed.valid and parsed.format == "v2", parsed.reason
    assert parsed.stored_checksum == parsed.computed_checksum
    entries = [e for e in parsed.checkpoint.entries or [] if e.pod_uid == pod.metadata.uid]
    assert [(e.container_name, e.resource_name, e.devices()) for e in entries] == [("main", resource, device)]
    assert allocresp.decode_alloc_resp(entries[0].alloc_resp).envs == {"DC_DEVICES": device[0]}
    assert sorted(parsed.checkpoint.registered_devices[resource]) == ["dev-0", "dev-1"]

    cli = [sys.executable, "-m", "device_conformance.cli", "checkpoint", "verify", str(node.host_path(CHECKPOINT))]
    result = subprocess.run(cli, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert str(parsed.computed_checksum) in result.stdout


def _restart_on(node, plugin, forge):
    """Stop the kubelet, rewrite its checkpoint with forge(bytes) (None deletes it), start it again,
    with the plugin holding back its registration; returns the kubelet log written since the start."""
    plugin.hold_registration(True)
    node.kubelet.stop()
    try:
        forged = forge(node.read_file(CHECKPOINT))
        if forged is None:
            node.delete_file(CHECKPOINT)
        else:
            node.write_file(CHECKPOINT, forged)
    finally:
        mark = node.kubelet.log_mark()
        node.kubelet.start()
    return mark


def _warning_logged(node, mark):
    def probe():
        log = node.kubelet.log_since(mark)
        return True if CHECKPOINT_READ_WARNING in log else Pending("no checkpoint warning in the kubelet log yet")

    until(probe, what=f"the kubelet to log {CHECKPOINT_READ_WARNING!r}", timeout=COUNT_TIMEOUT)


def _assert_new_pod_outcome(kube, node, namespace, make_pod, plugin, resource, expected):
    pod = make_pod("after", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    name = pod.metadata.name
    if expected == REJECTED_UNTIL_REGISTERED:
        failed = wait.for_admission_failure(kube, namespace, name, timeout=POD_TIMEOUT)
        assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
    else:
        assert expected == ADMITTED_WITHOUT_DEVICES, expected
        # The state is lost: the node still offers the devices, and the pod runs without any.
        wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
        entry = wait_podresources.for_listed_pod(_podresources_socket(node), namespace, name)
        assert entry.container("main").device_ids == {}, entry
    assert len(plugin.calls("Allocate")) == 1, "the plugin must not be asked while it is not registered"
    # Make room for the recovery check: the pod above counts against the devices either way.
    kube.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)
    wait.for_pod_gone(kube, namespace, name, timeout=POD_TIMEOUT)


def _recovers(kube, node, namespace, make_pod, plugin, resource):
    """Registration heals the node: counts back, new pods get devices, a valid v2 file is written."""
    plugin.hold_registration(False)
    wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    pod = make_pod("healed", ["sleep", "86400"], resources={resource: 1})
    wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    assert len(plugin.calls("Allocate")) == 2
    parsed = devicemanager.parse(node.read_file(CHECKPOINT))
    assert parsed.valid and parsed.format == "v2", parsed.reason


@pytest.mark.disruptive
def test_forged_pre_1_20_checkpoint_on_restart(kube, node, namespace, make_pod, kube_version, allocated):
    """Upstream DM1 / bug 3 (#102880): the same allocation written in the pre-1.20 "v1" format with a
    correct checksum. 1.23-1.29 recover it and reject pods until the plugin registers; 1.30+ dropped
    the v1 reader (#123398): warning, state lost, the node keeps offering the devices."""
    plugin, resource, _, _ = allocated
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
    _assert_new_pod_outcome(kube, node, namespace, make_pod, plugin, resource, expected)
    _recovers(kube, node, namespace, make_pod, plugin, resource)


@pytest.mark.disruptive
def test_checkpoint_with_wrong_checksum_on_restart(kube, node, namespace, make_pod, kube_version, allocated):
    """A checksum mismatch is not fatal: the kubelet logs it and starts with empty device state, so
    the node keeps offering the devices of a plugin that has not registered (api-facts §5.8)."""
    plugin, resource, _, _ = allocated
    expected = outcome(CORRUPT_CHECKPOINT_ON_RESTART, kube_version)
    mark = _restart_on(node, plugin, lambda data: devicemanager.corrupt(data, "checksum"))
    wait.for_node_ready(kube, node.name)
    _warning_logged(node, mark)
    if expected == ADMITTED_WITHOUT_DEVICES:
        wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=COUNT_TIMEOUT)
    _assert_new_pod_outcome(kube, node, namespace, make_pod, plugin, resource, expected)
    _recovers(kube, node, namespace, make_pod, plugin, resource)


@pytest.mark.disruptive
def test_missing_checkpoint_resets_the_extended_resource(kube, node, namespace, make_pod, allocated, known_bug):
    """No checkpoint at start means a recreated node to the kubelet (ShouldResetExtendedResourceCapacity,
    PR #77699): device capacity and allocatable drop to 0 until the plugin registers."""
    known_bug(EXTENDED_RESOURCES_NOT_RESET)
    plugin, resource, _, _ = allocated
    _restart_on(node, plugin, lambda data: None)
    wait.for_node_ready(kube, node.name)
    # The reset happens when the kubelet registers the node, before it reports Ready.
    wait.for_resource_counts(kube, node.name, resource, 0, 0, timeout=RESET_TIMEOUT)
    _recovers(kube, node, namespace, make_pod, plugin, resource)
