"""The device manager's checkpoint (kubelet_internal_checkpoint): what the kubelet writes, and what it
does on restart with a forged pre-1.20 file, a corrupt one, or none. Outcomes that changed between
versions come from expectations/deviceplugin.py. Count waits use DEVICE_COUNTS_AFTER_RESTART, the first
registration's too.

Whatever a version does with the file, one claim holds for users: no pod runs without the devices it
requested while the node advertises them. Where a restart loses the state, 1.37.1 breaks it
(kubernetes#116125): that check is a known-bug block, and what the version does instead is recorded with
its upstream reference (user property `behaviour`, and a report section)."""

import contextlib
import subprocess
import sys

import pytest
from device_conformance.fixtures.device_plugins import DEVICES_ENV, allocations

from device_conformance.framework import (
    ADMITTED_WITHOUT_DEVICES,
    CORRUPT_CHECKPOINT_ON_RESTART,
    EXTENDED_RESOURCES_NOT_RESET,
    POD_RUNS_WITHOUT_DEVICES_AFTER_STATE_LOSS,
    REJECTED_UNTIL_REGISTERED,
    V1_CHECKPOINT_ON_RESTART,
    Behaviour,
    Pending,
    allocresp,
    devicemanager,
    outcome,
    pods,
    timeouts,
    until,
    wait,
    wait_checkpoint_warning,
)

pytestmark = [pytest.mark.deviceplugin, pytest.mark.checkpoint]

CHECKPOINT = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def _holder(register_plugin, pod_factory):
    """A registered plugin (2 devices) and a running pod holding one of them (a checkpoint with an entry):
    (plugin, pod, the pod's device IDs)."""
    plugin = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = plugin.config.resource_name
    pod = pod_factory("holder", ["sleep", "86400"], resources={resource: 1})
    pod.wait_running()
    [held] = allocations(plugin, 1)
    listed = sorted(pod.devices(resource))  # podresources lists a set
    assert listed == sorted(held), f"podresources lists {listed} for the holder, the kubelet allocated {held}"
    return plugin, pod, held


def test_kubelets_checkpoint_verifies_and_records_the_allocation(node, register_plugin, pod_factory):
    """Our codec reads what the real kubelet wrote, recomputes its checksum exactly, and finds the
    pod's allocation, the Allocate response and the registered devices in it; so does the CLI."""
    plugin, pod, device = _holder(register_plugin, pod_factory)
    resource = plugin.config.resource_name
    parsed = devicemanager.parse(node.read_file(CHECKPOINT))
    assert parsed.valid and parsed.format == "v2", parsed.reason
    assert parsed.stored_checksum == parsed.computed_checksum, (
        f"stored checksum {parsed.stored_checksum}, our codec computes {parsed.computed_checksum}"
    )
    entries = [e for e in parsed.checkpoint.entries or [] if e.pod_uid == pod.uid]
    found = [(e.container_name, e.resource_name, e.devices()) for e in entries]
    assert found == [("main", resource, device)], f"checkpoint entries of the holder: {found}"
    envs = allocresp.decode_alloc_resp(entries[0].alloc_resp).envs
    assert envs == {DEVICES_ENV: device[0]}, f"the checkpointed Allocate response has envs {envs}"
    registered = (parsed.checkpoint.registered_devices or {}).get(resource)
    assert sorted(registered or []) == ["dev-0", "dev-1"], f"registered devices of {resource}: {registered}"

    cli = [sys.executable, "-m", "device_conformance.cli", "checkpoint", "verify", str(node.host_path(CHECKPOINT))]
    result = subprocess.run(cli, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert str(parsed.computed_checksum) in result.stdout, (
        f"the CLI does not name checksum {parsed.computed_checksum}: {result.stdout}"
    )


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


def _never_runs_without_its_devices(node, pod, plugin, counts):
    """The users' claim: a pod asking for one device either fails admission or runs with one, given by
    an Allocate call of the plugin; never Running without it while the node advertises the resource."""
    resource = plugin.config.resource_name

    def settled():
        current = pod.read()
        return current if current.status.phase in ("Running", "Failed") else Pending(pods.summary(current))

    current = until(settled, what=f"{pod} to run or fail admission", timeout=timeouts.POD_START)
    if current.status.phase == "Failed":
        return
    listed = pod.wait_podresources().container("main").device_ids.get(resource, [])
    asked = len(plugin.allocations()) - 1  # the holder's call came first
    assert len(listed) == 1 and asked == 1, (
        f"{pod} runs without the 1 {resource} it requested while node {node.name} advertises "
        f"capacity/allocatable {counts.counts()}: podresources lists {listed}, the plugin got {asked} Allocate "
        "call(s) for it"
    )


def _record_behaviour(request, behaviour: Behaviour, kube_version):
    """Make what this version does visible in the report as that version's recorded behaviour."""
    entry = behaviour.at(kube_version)
    text = f"{behaviour.name} on Kubernetes {kube_version}: {entry.outcome} (since {entry.release}: {entry.reference})"
    request.node.user_properties.append(("behaviour", text))
    request.node.add_report_section("call", "recorded behaviour", text)


def _new_pod_after_restart(request, node, pod_factory, node_resource, plugin, behaviour, kube_version, bug_block):
    """A pod bound to the node while the plugin has not registered again: never running without its
    device (inside `bug_block`), then what the version does by `behaviour`."""
    resource = plugin.config.resource_name
    expected = outcome(behaviour, kube_version)
    pod = pod_factory("after", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    with bug_block:
        _never_runs_without_its_devices(node, pod, plugin, node_resource(resource))
    if expected == REJECTED_UNTIL_REGISTERED:
        failed = pod.wait_admission_failure()
        assert failed.status.reason == "UnexpectedAdmissionError", pods.summary(failed)
    else:
        assert expected == ADMITTED_WITHOUT_DEVICES, expected
        # The state is lost: the node still offers the devices, and the pod runs without any.
        pod.wait_running()
        listed = pod.wait_podresources().container("main").device_ids
        assert listed == {}, f"recorded as {ADMITTED_WITHOUT_DEVICES}, but podresources lists {listed}"
        _record_behaviour(request, behaviour, kube_version)
    allocations(plugin, 1)  # only the holder's: the plugin is not asked while it is not registered
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
    _, granted = allocations(plugin, 1, 1)
    listed = sorted(pod.devices(resource))  # podresources lists a set
    assert listed == sorted(granted), f"after recovery podresources lists {listed}, the kubelet allocated {granted}"
    parsed = devicemanager.parse(node.read_file(CHECKPOINT))
    assert parsed.valid and parsed.format == "v2", parsed.reason


def _state_loss_block(request, expected):
    """The known-bug block of the users' claim where this restart loses the device state; the bug is
    declared here, at run time, because whether a pre-1.20 file loses it depends on the release (a static
    marker would demand the block where the kubelet recovers the file and the bug cannot show)."""
    if expected != ADMITTED_WITHOUT_DEVICES:
        return contextlib.nullcontext()
    bug = POD_RUNS_WITHOUT_DEVICES_AFTER_STATE_LOSS
    request.applymarker(pytest.mark.known_bug(bug))
    request.node.user_properties.append(("known_bug", bug.issue))
    return request.getfixturevalue("shows_known_bug")(bug)


@pytest.mark.disruptive
@pytest.mark.scenario("DM1")
def test_forged_pre_1_20_checkpoint_on_restart(
    request, kube, node, pod_factory, node_resource, register_plugin, kube_version
):
    """Upstream DM1 / kubernetes#102880: the same allocation written in the pre-1.20 "v1" format with a
    correct checksum. 1.23-1.30 recover it and reject pods until the plugin registers; 1.31+ dropped
    the v1 reader (#123398): warning, state lost, the node keeps offering the devices, and a pod runs
    without them (#116125, a known-bug block there)."""
    plugin, _, _ = _holder(register_plugin, pod_factory)
    expected = outcome(V1_CHECKPOINT_ON_RESTART, kube_version)

    def to_v1(data):
        checkpoint = devicemanager.parse(data).checkpoint
        checkpoint.entries = [entry.as_v1() for entry in checkpoint.entries or []]
        forged = devicemanager.encode_v1(checkpoint)
        reread = devicemanager.parse(forged)
        assert reread.format == "v1" and reread.v1_ok, f"the forged file reads as {reread.format}: {reread.reason}"
        return forged

    mark = _restart_on(node, plugin, to_v1)
    wait.for_node_ready(kube, node.name)
    if expected == ADMITTED_WITHOUT_DEVICES:
        wait_checkpoint_warning(node, mark)
    block = _state_loss_block(request, expected)
    _new_pod_after_restart(
        request, node, pod_factory, node_resource, plugin, V1_CHECKPOINT_ON_RESTART, kube_version, block
    )
    _recovers(node, pod_factory, node_resource, plugin)


@pytest.mark.disruptive
@pytest.mark.known_bug(POD_RUNS_WITHOUT_DEVICES_AFTER_STATE_LOSS)
def test_checkpoint_with_wrong_checksum_on_restart(
    request, kube, node, pod_factory, node_resource, register_plugin, kube_version, shows_known_bug
):
    """A checksum mismatch is not fatal: the kubelet logs it and starts with empty device state, so
    the node keeps offering the devices of a plugin that has not registered (pkg/kubelet/cm/devicemanager/
    manager.go Start: a failed checkpoint read is only logged), and a pod runs without them (#116125)."""
    plugin, _, _ = _holder(register_plugin, pod_factory)
    expected = outcome(CORRUPT_CHECKPOINT_ON_RESTART, kube_version)
    mark = _restart_on(node, plugin, lambda data: devicemanager.corrupt(data, "checksum"))
    wait.for_node_ready(kube, node.name)
    wait_checkpoint_warning(node, mark)
    if expected == ADMITTED_WITHOUT_DEVICES:
        node_resource(plugin.config.resource_name).wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    block = shows_known_bug(POD_RUNS_WITHOUT_DEVICES_AFTER_STATE_LOSS)
    _new_pod_after_restart(
        request, node, pod_factory, node_resource, plugin, CORRUPT_CHECKPOINT_ON_RESTART, kube_version, block
    )
    _recovers(node, pod_factory, node_resource, plugin)


@pytest.mark.disruptive
@pytest.mark.scenario("DM-U6")
@pytest.mark.known_bug(EXTENDED_RESOURCES_NOT_RESET)
def test_missing_checkpoint_resets_the_extended_resource(
    kube, node, pod_factory, node_resource, register_plugin, shows_known_bug
):
    """No checkpoint at start means a recreated node to the kubelet (ShouldResetExtendedResourceCapacity,
    PR #77699): device capacity and allocatable drop to 0 until the plugin registers (#126943: they do
    not; a known-bug block), and the plugin registering heals the node."""
    plugin, _, _ = _holder(register_plugin, pod_factory)
    _restart_on(node, plugin, lambda data: None)
    wait.for_node_ready(kube, node.name)
    # The reset happens when the kubelet registers the node, before it reports Ready.
    with shows_known_bug(EXTENDED_RESOURCES_NOT_RESET):
        node_resource(plugin.config.resource_name).wait_counts(0, 0, timeouts.EXTENDED_RESOURCE_RESET)
    _recovers(node, pod_factory, node_resource, plugin)
