"""Black-box: the kubelet with a device plugin it cannot see into, our fake or a vendor's.

These tests run against our fake by default and against the vendor's plugin with `--vendor-device-plugin
RESOURCE --vendor-command ...` (fixtures/vendor.py `subject_plugin`). They use only what any plugin offers:
start, stop, SIGKILL, and what the kubelet shows. Every count is exact: the devices are what the node offers
after registration (capacity = allocatable = N, N > 0) and podresources GetAllocatableResources lists (N IDs);
the kubelet's calls are its own metrics (`kubelet_device_plugin_alloc_duration_seconds_count`: one Allocate per
container that requests the resource; `kubelet_device_plugin_registration_total`: one Register per start), which
restart at zero with each kubelet process.

Each test fails against our fake with the defect named here (`python -m
device_conformance.fakes.device_plugin.as_subject --defect NAME` as the vendor command), at the line shown; a
defect that fails several tests is named at each (suites/vendor_mode/test_vendor_mode_on_fakes.py runs every
device-plugin black-box test with each):

test (defect of our fake it fails on: the failing line)
- test_pods_get_distinct_offered_devices_until_none_is_left (list-omits-allocated: the second pod's
  pod.wait_running(), it stays Pending: with dev-0 held the node offers 1 device)
- test_kubelet_restart_keeps_the_device_and_the_plugin_registers_again (unstable-device-ids:
  `assert allocatable_ids(node, resource) == offered`, ['dev-0-r2', 'dev-1-r2'] after the restart;
  list-omits-allocated: `assert offered_devices(kube, node, resource) == n`, 1 with the pod's device held)
- test_killed_plugin_restarted_keeps_assignments_and_serves_new_pods (ids-change-per-start:
  one_device(after, ...), the new pod holds an ID renamed '<id>-p<new pid>', not one of the offered;
  list-omits-allocated: node_resource(resource).wait_counts(n, 0, ...), capacity 1 after the SIGKILL)
- test_reboot_never_runs_the_pod_without_its_device (list-omits-allocated:
  the last `assert offered_devices(kube, node, resource) == n`, 1: the plugin that lived through the reboot still
  hides the device it handed out)

No defect of our fake fails the other two, and none can without failing every test's setup first:
- test_registered_devices_are_offered_and_podresources_lists_the_same checks what the subject_plugin fixture waits
  for before every test (fixtures/vendor.py _start_registered: exactly one Register, then capacity = allocatable =
  the count GetAllocatableResources lists, > 0). A plugin that never registers or offers its devices
  (register-crash, options-crash) is an error in that fixture; duplicate IDs in a list (duplicate-device-ids) are
  merged by the kubelet, which keeps a resource's devices by ID (pkg/kubelet/cm/devicemanager/manager.go
  genericDeviceUpdateCallback, allDevices[resource][dev.ID]), so node status and podresources count N distinct
  IDs. Only a second Register that comes after the fixture's wait fails it, and whether it does is timing.
- test_over_request_fails_admission_without_an_allocate is the kubelet's own decision: it refuses a request above
  its healthy devices not in use before any call to the plugin (manager.go devicesToAllocate, "requested number of
  devices unavailable ... Requested: %d, Available: %d"); a plugin changes N only through its list, which the
  test reads first.
Both pass with every defect of the fake that lets the fixture's setup through (those named above,
duplicate-device-ids, allocate-first-container-only, preferred-ignores-must-include,
prestart-error, allocate-crash-on-unknown-id, allocate-mounts-host-dev); with options-crash both error in setup.
"""

import pytest
from device_conformance.fixtures.device_plugin_blackbox import allocate_calls, one_device, second_device_judged
from device_conformance.fixtures.vendor import (
    allocatable_ids,
    offered_devices,
    wait_registrations,
)

from device_conformance.framework import (
    ADMISSION_ERROR,
    Pending,
    assert_running_unrestarted,
    pods,
    timeouts,
    until,
    wait,
)

pytestmark = [pytest.mark.deviceplugin, pytest.mark.vendor_blackbox("device-plugin")]


@pytest.mark.scenario("DM-U2")
def test_registered_devices_are_offered_and_podresources_lists_the_same(kube, node, kubelet_counts, subject_plugin):
    """After one Register the node offers N > 0 devices (capacity = allocatable: all healthy) and podresources
    GetAllocatableResources lists exactly N distinct device IDs of the resource."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    registrations = kubelet_counts.registrations(resource) - subject_plugin.registered_before
    assert registrations == 1, f"the kubelet counted {registrations} Register call(s) of {resource} on start, not 1"
    ids = allocatable_ids(node, resource)
    assert len(ids) == n and len(set(ids)) == n, (
        f"podresources GetAllocatableResources lists {ids} for {resource}; node status offers {n}"
    )


@pytest.mark.scenario("DP1", "DP4")
def test_pods_get_distinct_offered_devices_until_none_is_left(kube, node, pod_factory, kubelet_counts, subject_plugin):
    """N pods asking for one device each run, each with one offered device, no device twice, one Allocate per
    container; the next pod, bound to the node, fails admission: Requested 1, Available 0."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    before = kubelet_counts.allocations(resource)
    held = []
    for index in range(n):
        pod = pod_factory(f"dev{index}", ["sleep", "86400"], resources={resource: 1})
        pod.wait_running()
        held.append(one_device(pod, resource, offered))
    assert sorted(held) == offered, f"the {n} pods hold {sorted(held)}; each offered device once is {offered}"
    allocate_calls(kubelet_counts, resource, before + n)

    extra = pod_factory("extra", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    failed = extra.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Requested: 1, Available: 0" in failed.status.message, failed.status.message
    allocate_calls(kubelet_counts, resource, before + n)


@pytest.mark.scenario("DM-U4")
def test_over_request_fails_admission_without_an_allocate(kube, node, pod_factory, kubelet_counts, subject_plugin):
    """A pod asking for N + 1 devices, bound to the node, fails admission (Requested N+1, Available N) and the
    plugin gets no Allocate."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    before = kubelet_counts.allocations(resource)
    pod = pod_factory("greedy", ["sleep", "86400"], resources={resource: n + 1}, node_name=node.name)
    failed = pod.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert f"Requested: {n + 1}, Available: {n}" in failed.status.message, failed.status.message
    allocate_calls(kubelet_counts, resource, before)


@pytest.mark.disruptive
@pytest.mark.scenario("DP4")
def test_kubelet_restart_keeps_the_device_and_the_plugin_registers_again(
    kube, node, pod_factory, kubelet_counts, subject_plugin
):
    """Across a kubelet restart the pod keeps running, unrestarted, with the same device; the plugin registers
    once with the new kubelet, the node offers all N again, and the new kubelet makes no Allocate call."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    pod = pod_factory("keep", ["sleep", "86400"], resources={resource: 1})
    uid = pod.wait_running().metadata.uid
    held = one_device(pod, resource, offered)

    node.kubelet.restart()
    # The new kubelet's counters start at zero: exactly one Register since it started.
    wait_registrations(kubelet_counts, resource, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    assert offered_devices(kube, node, resource) == n
    assert allocatable_ids(node, resource) == offered
    assert_running_unrestarted(pod, uid, "after the kubelet restart")
    assert pod.devices(resource) == [held], (
        f"after the restart podresources lists {pod.devices(resource)}, not [{held!r}]"
    )
    allocate_calls(kubelet_counts, resource, 0)


@pytest.mark.scenario("DP7", "DM-U7")
def test_killed_plugin_restarted_keeps_assignments_and_serves_new_pods(
    kube, node, pod_factory, node_resource, kubelet_counts, subject_plugin, request
):
    """SIGKILL of the plugin: the node keeps capacity N with allocatable 0; started again it registers once, N/N
    comes back, the running pod keeps its device and a new pod gets another one (one Allocate each; not judged
    with one device)."""
    plugin = subject_plugin
    resource = plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    pod = pod_factory("before", ["sleep", "86400"], resources={resource: 1})
    uid = pod.wait_running().metadata.uid
    held = one_device(pod, resource, offered)
    registered = kubelet_counts.registrations(resource)
    allocated = kubelet_counts.allocations(resource)

    plugin.kill()
    node_resource(resource).wait_counts(n, 0, timeouts.DEVICE_COUNTS_AFTER_PLUGIN_KILL)
    plugin.respawn()
    wait_registrations(kubelet_counts, resource, registered + 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    assert offered_devices(kube, node, resource) == n
    assert_running_unrestarted(pod, uid, "after the plugin restart")
    assert pod.devices(resource) == [held], f"podresources lists {pod.devices(resource)} for {pod}, not [{held!r}]"
    if second_device_judged(request.node, n, "a new pod after the restart"):
        after = pod_factory("after", ["sleep", "86400"], resources={resource: 1})
        after.wait_running()
        other = one_device(after, resource, offered)
        assert other != held, f"the new pod got {other!r}, which {pod} holds"
        allocate_calls(kubelet_counts, resource, allocated + 1)


@pytest.mark.disruptive
@pytest.mark.scenario("DP11", "DM3")
def test_reboot_never_runs_the_pod_without_its_device(kube, node, pod_factory, kubelet_counts, subject_plugin, request):
    """A reboot (every sandbox gone, kubelet restarted) with the plugin running: the pod is re-admitted and runs
    with one offered device again, or fails admission (UnexpectedAdmissionError) when the plugin has not
    registered yet; never does it run without a device. Which one happened is recorded (`reboot_outcome`)."""
    resource = subject_plugin.resource_name
    n = offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    pod = pod_factory("rebooted", ["sleep", "86400"], resources={resource: 1}, restart_policy="Always")
    first = pod.wait_running()
    main_id = next(s.container_id for s in first.status.container_statuses if s.name == "main")
    one_device(pod, resource, offered)

    removed = node.simulate_reboot()
    assert removed >= 1, f"the reboot simulation removed {removed} pod sandboxes, the device pod's at least"
    wait.for_node_ready(kube, node.name)

    def settled():
        current = pod.read()
        if current.status.phase == "Failed":
            return current
        main = next((s for s in current.status.container_statuses or [] if s.name == "main"), None)
        if main and main.state.running and main.container_id != main_id:
            return current
        return Pending(pods.summary(current))

    outcome = until(settled, what=f"{pod} to run again or fail admission after the reboot", timeout=timeouts.CLAIM)
    if outcome.status.phase == "Failed":
        request.node.user_properties.append(("reboot_outcome", f"failed admission: {outcome.status.message}"))
        assert outcome.status.reason == ADMISSION_ERROR, pods.summary(outcome)
    else:
        request.node.user_properties.append(("reboot_outcome", "ran again with its device"))
        one_device(pod, resource, offered)
    wait_registrations(kubelet_counts, resource, 1, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    assert offered_devices(kube, node, resource) == n
