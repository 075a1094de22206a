"""Black-box, second set: what a device plugin must keep doing across pods, restarts and concurrent admission,
judged from what the kubelet shows, so it runs against our fake and against a vendor's plugin alike
(`--vendor-device-plugin RESOURCE --vendor-command ...`, fixtures/vendor.py `subject_plugin`).

Besides node status, podresources and the kubelet's metrics (test_vendor_blackbox.py), these tests read the
kubelet's kubelet_internal_checkpoint: the device manager records there, per pod UID and container, the device
IDs it allocated (PodDeviceEntries) and the IDs each plugin last listed (RegisteredDevices)
(pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go). A plugin must list every device it has, allocated or
not, under IDs that stay the same for as long as the device does (api.proto ListAndWatch: the list changes
when "a Device state change or a Device disappears"), and must answer Allocate for any advertised ID the kubelet
sends, also one it answered before: the kubelet tells it of no release, and hands an init container's devices
to the app containers again (manager.go devicesToAllocate, reusable devices).

Each test fails against our fake with the defect named here (`python -m
device_conformance.fakes.device_plugin.as_subject --defect NAME` as the vendor command), at the line shown; a
defect that fails several tests is named at each (suites/vendor_mode/test_vendor_mode_on_fakes.py runs every
device-plugin black-box test with each):

test (defect of our fake it fails on: the failing line)
- test_init_container_devices_are_reused_by_the_app_container (allocate-refuses-handed-out-id:
  pod.wait_running(), the app container's Allocate refused: UnexpectedAdmissionError; list-omits-allocated:
  _still_advertised while the pod holds one device, GetAllocatableResources lists one ID)
- test_deleted_pod_frees_its_devices_for_the_next_pod (allocate-refuses-handed-out-id:
  second.wait_running(), UnexpectedAdmissionError; list-omits-allocated: second.wait_running(), Pending: the
  plugin still hides the devices the deleted pod held, the node offers 0)
- test_plugin_restarted_twice_in_a_row_registers_and_serves (ids-change-per-start:
  _still_advertised after restart 1, GetAllocatableResources lists the renamed IDs)
- test_kubelet_sigkill_keeps_pods_devices_and_checkpoint (unstable-device-ids:
  _still_advertised after the SIGKILL, GetAllocatableResources lists the renamed IDs; list-omits-allocated:
  `assert offered_devices(kube, node, resource) == n` after the SIGKILL, 1 with the pod's device held)
- test_pods_admitted_together_get_distinct_devices (list-omits-allocated:
  _still_advertised while the pods hold every device, GetAllocatableResources lists [])
- test_containers_of_one_pod_get_distinct_devices (list-omits-allocated:
  _still_advertised while the pod holds two devices, GetAllocatableResources lists [])
- test_kubelet_restart_with_every_device_held_admits_no_more (unstable-device-ids:
  rejected(), the extra pod runs with 'dev-0-r2', a renamed held device; list-omits-allocated:
  offered_devices() after the restart, the node offers 0/0 with every device held)
- test_pod_deleted_while_the_plugin_is_down_frees_its_devices (ids-change-per-start:
  _still_advertised after the plugin came back, GetAllocatableResources lists the renamed IDs;
  list-omits-allocated: node_resource(resource).wait_counts(n, 0, ...) after the SIGKILL, capacity 0 with every
  device held)
"""

import pytest
from device_conformance.fixtures.device_plugin_blackbox import allocate_calls, one_device, second_device_judged
from device_conformance.fixtures.vendor import allocatable_ids, offered_devices, wait_registrations

from device_conformance.framework import (
    ADMISSION_ERROR,
    Abort,
    Pending,
    assert_running_unrestarted,
    checkpointed_devices,
    device_checkpoint,
    nodes,
    pods,
    timeouts,
    until,
    wait,
)

pytestmark = [pytest.mark.deviceplugin, pytest.mark.vendor_blackbox("device-plugin")]

SLEEP = ["sleep", "86400"]


def _still_advertised(kube, node, resource, offered, when):
    """The kubelet still has every offered device, under the same IDs: podresources GetAllocatableResources
    (the healthy devices, allocated or not), the checkpoint's RegisteredDevices and node status all agree."""
    listed = allocatable_ids(node, resource)
    assert listed == offered, (
        f"{when}: podresources GetAllocatableResources lists {listed} of {resource}, not {offered}"
    )
    registered = sorted((device_checkpoint(node).registered_devices or {}).get(resource) or [])
    assert registered == offered, f"{when}: the checkpoint's RegisteredDevices of {resource} are {registered}"
    counts = nodes.resource_counts(kube, node.name, resource)
    assert counts == (len(offered), len(offered)), f"{when}: node capacity/allocatable of {resource} are {counts}"


def _at_least(n, needed, what):
    if n < needed:
        pytest.skip(f"NOT APPLICABLE: {what} needs {needed} devices; the subject offers {n}")


@pytest.mark.scenario("DM-U5")
def test_init_container_devices_are_reused_by_the_app_container(
    kube, node, pod_factory, kubelet_counts, subject_plugin, request
):
    """An init container and the app container each ask for one device: the app container gets the init
    container's device (the kubelet's reuse rule), with one Allocate each, so the pod holds one device and the
    other N - 1 stay free for another pod (not judged with one device); the plugin keeps listing all N."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    before = kubelet_counts.allocations(resource)
    init = pods.container_spec("init", ["true"], resources={resource: 1})
    pod = pod_factory("reuse", SLEEP, resources={resource: 1}, init_containers=[init])
    pod.wait_running()
    held = one_device(pod, resource, offered)
    recorded = checkpointed_devices(node, pod, resource)
    assert recorded == {"init": [held], "main": [held]}, (
        f"the checkpoint records {recorded} for {pod}; the app container must reuse the init container's {held!r}"
    )
    allocate_calls(kubelet_counts, resource, before + 2)
    _still_advertised(kube, node, resource, offered, "while the pod holds one device")
    if second_device_judged(request.node, n, "a pod on the devices left free"):
        rest = pod_factory("rest", SLEEP, resources={resource: n - 1})
        rest.wait_running()
        free = sorted(set(offered) - {held})
        assert sorted(rest.devices(resource)) == free, (
            f"a pod asking for the {n - 1} device(s) left got {sorted(rest.devices(resource))}, not {free}"
        )
        allocate_calls(kubelet_counts, resource, before + 3)


@pytest.mark.scenario("DP1")
def test_deleted_pod_frees_its_devices_for_the_next_pod(kube, node, pod_factory, kubelet_counts, subject_plugin):
    """A pod holding all N devices is deleted; a new pod asking for all N runs with the same N devices (the
    plugin answers Allocate for IDs it answered before), the checkpoint keeps no entry of the deleted pod, and
    the node offers N/N throughout."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    before = kubelet_counts.allocations(resource)
    first = pod_factory("first", SLEEP, resources={resource: n})
    first.wait_running()
    assert sorted(first.devices(resource)) == offered, f"{first} holds {sorted(first.devices(resource))}, not {offered}"
    first.delete()
    first.wait_gone()

    second = pod_factory("second", SLEEP, resources={resource: n})
    second.wait_running()
    assert sorted(second.devices(resource)) == offered, (
        f"{second} holds {sorted(second.devices(resource))}, not {offered}"
    )
    assert checkpointed_devices(node, first, resource) == {}, f"the checkpoint still records the deleted {first}"
    assert checkpointed_devices(node, second, resource) == {"main": offered}
    allocate_calls(kubelet_counts, resource, before + 2)
    _still_advertised(kube, node, resource, offered, "after the second pod took every device")


@pytest.mark.scenario("DP7")
def test_plugin_restarted_twice_in_a_row_registers_and_serves(
    kube, node, pod_factory, kubelet_counts, subject_plugin, request
):
    """The plugin stopped (SIGTERM) and started twice in a row registers once per start, lists the same N
    device IDs each time, the running pod keeps its device unrestarted, and a new pod gets a free one (not judged
    with one device)."""
    plugin = subject_plugin
    resource = plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    pod = pod_factory("kept", SLEEP, resources={resource: 1})
    uid = pod.wait_running().metadata.uid
    held = one_device(pod, resource, offered)
    registered = kubelet_counts.registrations(resource)
    allocated = kubelet_counts.allocations(resource)

    for round_ in (1, 2):
        plugin.restart()
        wait_registrations(kubelet_counts, resource, registered + round_, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        assert offered_devices(kube, node, resource) == n
        _still_advertised(kube, node, resource, offered, f"after restart {round_} of the plugin")
    assert_running_unrestarted(pod, uid, "after two plugin restarts")
    assert pod.devices(resource) == [held], f"podresources lists {pod.devices(resource)} for {pod}, not [{held!r}]"
    if second_device_judged(request.node, n, "a new pod after the restarts"):
        after = pod_factory("after", SLEEP, resources={resource: 1})
        after.wait_running()
        other = one_device(after, resource, offered)
        assert other != held, f"the new pod got {other!r}, which {pod} holds"
        allocate_calls(kubelet_counts, resource, allocated + 1)


@pytest.mark.disruptive
@pytest.mark.scenario("DP4")
def test_kubelet_sigkill_keeps_pods_devices_and_checkpoint(kube, node, pod_factory, kubelet_counts, subject_plugin):
    """The kubelet SIGKILLed (no graceful stop) and started again: the plugin registers once with the new
    kubelet under the same N device IDs, the pod runs on unrestarted with its device, the checkpoint still maps
    its container to that device, and the new kubelet makes no Allocate call."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    pod = pod_factory("survivor", SLEEP, resources={resource: 1})
    uid = pod.wait_running().metadata.uid
    held = one_device(pod, resource, offered)

    node.kubelet.crash()
    wait.for_node_ready(kube, node.name)
    wait_registrations(kubelet_counts, resource, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    assert offered_devices(kube, node, resource) == n
    _still_advertised(kube, node, resource, offered, "after the kubelet's SIGKILL")
    assert_running_unrestarted(pod, uid, "after the kubelet's SIGKILL")
    assert pod.devices(resource) == [held], f"after the SIGKILL podresources lists {pod.devices(resource)}"
    recorded = checkpointed_devices(node, pod, resource)
    assert recorded == {"main": [held]}, f"after the SIGKILL the checkpoint records {recorded} for {pod}"
    allocate_calls(kubelet_counts, resource, 0)


@pytest.mark.scenario("DP1", "DP4")
def test_pods_admitted_together_get_distinct_devices(kube, node, pod_factory, kubelet_counts, subject_plugin):
    """N pods of one device each, created at once: all run, each with its own offered device (every device
    once), one Allocate per pod, the checkpoint records the same as podresources, and the node still offers
    all N devices while they are held."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    before = kubelet_counts.allocations(resource)
    together = [pod_factory(f"together{i}", SLEEP, resources={resource: 1}) for i in range(n)]
    for pod in together:
        pod.wait_running()
    held = {pod.name: one_device(pod, resource, offered) for pod in together}
    assert sorted(held.values()) == offered, f"the {n} pods hold {held}; each offered device once is {offered}"
    recorded = {pod.name: checkpointed_devices(node, pod, resource) for pod in together}
    assert recorded == {name: {"main": [device]} for name, device in held.items()}, (
        f"the checkpoint records {recorded}; podresources lists {held}"
    )
    allocate_calls(kubelet_counts, resource, before + n)
    _still_advertised(kube, node, resource, offered, "while the pods hold every device")


@pytest.mark.scenario("DP1")
def test_containers_of_one_pod_get_distinct_devices(kube, node, pod_factory, kubelet_counts, subject_plugin):
    """Two app containers of one pod, one device each: two distinct offered devices, one Allocate per
    container, the checkpoint records each container's own device, and the node still offers all N."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    _at_least(n, 2, "two containers of one device each")
    offered = allocatable_ids(node, resource)
    before = kubelet_counts.allocations(resource)
    second = pods.container_spec("second", SLEEP, resources={resource: 1})
    pod = pod_factory("pair", SLEEP, resources={resource: 1}, containers=[second])
    pod.wait_running()
    devices = {c: one_device(pod, resource, offered, c) for c in ("main", "second")}
    assert devices["main"] != devices["second"], f"both containers of {pod} got {devices['main']!r}"
    recorded = checkpointed_devices(node, pod, resource)
    assert recorded == {c: [d] for c, d in devices.items()}, (
        f"the checkpoint records {recorded}; podresources lists {devices}"
    )
    allocate_calls(kubelet_counts, resource, before + 2)
    _still_advertised(kube, node, resource, offered, "while the pod holds two devices")


@pytest.mark.disruptive
@pytest.mark.scenario("DP4")
def test_kubelet_restart_with_every_device_held_admits_no_more(kube, node, pod_factory, kubelet_counts, subject_plugin):
    """N pods hold all N devices; after a kubelet restart (the plugin registers once again, N/N offered) a pod
    asking for one more device fails admission (Requested 1, Available 0) without an Allocate: the restarted
    kubelet knows the held devices from its checkpoint, and the plugin's IDs still name them."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    holders = [pod_factory(f"holder{i}", SLEEP, resources={resource: 1}) for i in range(n)]
    for pod in holders:
        pod.wait_running()
    held = sorted(one_device(pod, resource, offered) for pod in holders)
    assert held == offered, f"the {n} pods hold {held}; each offered device once is {offered}"

    node.kubelet.restart()
    wait_registrations(kubelet_counts, resource, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    assert offered_devices(kube, node, resource) == n
    extra = pod_factory("extra", SLEEP, resources={resource: 1}, node_name=node.name)

    def rejected():
        current = extra.read()
        if current.status.phase == "Failed":
            return current
        if current.status.phase == "Running":
            raise Abort(  # ends the wait at once: running, it will not fail admission any more
                f"{extra} runs with {extra.devices(resource)} of {resource} after the kubelet restart, although "
                f"the {n} pods hold every device {held}"
            )
        return Pending(pods.summary(current))

    failed = until(rejected, what=f"{extra} to fail admission", timeout=timeouts.POD_START)
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Requested: 1, Available: 0" in failed.status.message, failed.status.message
    allocate_calls(kubelet_counts, resource, 0)


@pytest.mark.scenario("DP7", "DM-U7")
def test_pod_deleted_while_the_plugin_is_down_frees_its_devices(
    kube, node, pod_factory, node_resource, kubelet_counts, subject_plugin
):
    """A pod holding all N devices is deleted while the plugin is down (SIGKILL: capacity N, allocatable 0);
    the plugin started again registers once under the same N IDs, and a new pod asking for all N runs with
    them (one Allocate), the deleted pod gone from the checkpoint."""
    plugin = subject_plugin
    resource = plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    holder = pod_factory("holder", SLEEP, resources={resource: n})
    holder.wait_running()
    assert sorted(holder.devices(resource)) == offered, (
        f"{holder} holds {sorted(holder.devices(resource))}, not {offered}"
    )
    registered = kubelet_counts.registrations(resource)

    plugin.kill()
    node_resource(resource).wait_counts(n, 0, timeouts.DEVICE_COUNTS_AFTER_PLUGIN_KILL)
    holder.delete()
    holder.wait_gone()
    plugin.respawn()
    wait_registrations(kubelet_counts, resource, registered + 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    assert offered_devices(kube, node, resource) == n
    _still_advertised(kube, node, resource, offered, "after the plugin came back")
    allocated = kubelet_counts.allocations(resource)
    successor = pod_factory("successor", SLEEP, resources={resource: n})
    successor.wait_running()
    assert sorted(successor.devices(resource)) == offered, (
        f"{successor} holds {sorted(successor.devices(resource))}, not {offered}"
    )
    assert checkpointed_devices(node, holder, resource) == {}, f"the checkpoint still records the deleted {holder}"
    allocate_calls(kubelet_counts, resource, allocated + 1)
