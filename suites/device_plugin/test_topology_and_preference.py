"""Device topology and GetPreferredAllocation beyond the simple case: a device on NUMA node 1 keeps its node
in the device manager checkpoint and in podresources List (also after a kubelet restart), and the app
container's GetPreferredAllocation, when an init container's device is reused, carries that device as
mustInclude, the whole request size and exactly the devices not held by other pods.

Proved against one-line breaks of a 1.37.1 tree (K8S_SOURCE; `pytest <this module> -n 1 -m ''
--k8s-source DIR --k8s-version 1.37.1`), each reverted afterwards (the same run passes):

- devicemanager manager.go allocateContainerResources: `allocDevicesWithNUMA[node.ID] =
  append(allocDevicesWithNUMA[node.ID], dev)` -> `allocDevicesWithNUMA[0*node.ID] =
  append(allocDevicesWithNUMA[0*node.ID], dev)` (every device on NUMA 0):
  `AssertionError: before the kubelet restart the checkpoint holds {('main', 'dc-41e25fb9.example.com/dev'): {0:
  ['dev-1']}} for pod dc-67905838/numa-50f18e, expected {('main', 'dc-41e25fb9.example.com/dev'): {1: ['dev-1']}}`
- devicemanager pod_devices.go getContainerDevices: `NUMANodes := []*pluginapi.NUMANode{{ID: numaid}}` -> `{{ID: 0}}`
  (podresources topology always node 0, the checkpoint right):
  `AssertionError: before the kubelet restart podresources List reports
  [Devices(resource_name='dc-48296c74.example.com/dev', device_ids=('dev-1',), numa_nodes=(0,))] for pod
  dc-f594dfed/numa-18268b main, expected [Devices(..., device_ids=('dev-1',), numa_nodes=(1,))]`
- devicemanager pod_devices.go fromCheckpointData: `pdev.insert(..., entry.DeviceIDs, allocResp)` -> `pdev.insert(...,
  checkpoint.DevicesPerNUMA{0: entry.DeviceIDs.Devices().UnsortedList()}, allocResp)` (a restart restores every device
  on NUMA 0; the re-registration writes it back):
  `AssertionError: after the kubelet restart the checkpoint holds {('main', 'dc-429a04d5.example.com/dev'): {0:
  ['dev-1']}} for pod dc-6e9f325d/numa-d7ecd7, expected {('main', 'dc-429a04d5.example.com/dev'): {1: ['dev-1']}}`
- devicemanager manager.go devicesToAllocate, the second callGetPreferredAllocationIfAvailable: `...,
  available.Union(allocated), allocated, required)` -> `..., available.Union(allocated), sets.New[string](), required)`
  (mustInclude dropped):
  `AssertionError: GetPreferredAllocation asked [{'available': ['dev-0', 'dev-1', 'dev-2', 'dev-3'], 'must_include': [],
  'size': 1}, {'available': ['dev-0', 'dev-1', 'dev-2', 'dev-3'], 'must_include': [], 'size': 2}] (init, then main),
  expected [..., {'available': [...], 'must_include': ['dev-2'], 'size': 2}]; Allocate calls: {'init': ['dev-2'],
  'main': ['dev-2', 'dev-3']}`
- the same call: `available.Union(allocated), allocated, required)` -> `available, allocated, required)` (the reused
  device left out of available):
  `AssertionError: GetPreferredAllocation asked [..., {'available': ['dev-0', 'dev-1', 'dev-3'], 'must_include':
  ['dev-2'], 'size': 2}] (init, then main), expected [..., {'available': ['dev-0', 'dev-1', 'dev-2', 'dev-3'],
  'must_include': ['dev-2'], 'size': 2}]; ...`
- the same call: `..., allocated, required)` -> `..., allocated, needed)` (size of what is left, not of the request):
  `AssertionError: GetPreferredAllocation asked [..., {'available': ['dev-0', 'dev-1', 'dev-2', 'dev-3'],
  'must_include': ['dev-2'], 'size': 1}] (init, then main), expected [..., {..., 'must_include': ['dev-2'], 'size': 2}];
  Allocate calls: {'init': ['dev-2'], 'main': ['dev-2', 'dev-0']}`
"""

import pytest
from device_conformance.fixtures.device_plugins import DEVICES_ENV, allocations

from device_conformance.framework import (
    REGISTRATION_CALLS,
    DeviceConfig,
    OptionsConfig,
    devicemanager,
    podresources,
    pods,
    timeouts,
)

pytestmark = pytest.mark.deviceplugin

ECHO = f'echo "{DEVICES_ENV}=${DEVICES_ENV}"'
SLEEP = f"{ECHO}; exec sleep 86400"
PREFERRED = OptionsConfig(get_preferred_allocation_available=True)


def _checkpointed_by_numa(node, pod) -> dict[tuple[str, str], dict[int, list[str]]]:
    """(container, resource) -> {NUMA node: sorted IDs} of the pod's entries in kubelet_internal_checkpoint."""
    parsed = devicemanager.parse(node.read_file(devicemanager.DEFAULT_PATH))
    assert parsed.valid and parsed.format == "v2", parsed.reason
    return {
        (e.container_name, e.resource_name): {n: sorted(ids or []) for n, ids in (e.device_ids or {}).items()}
        for e in parsed.checkpoint.entries or []
        if e.pod_uid == pod.uid
    }


def _listed(node, pod, resource: str) -> list[podresources.Devices]:
    """The `resource` entries podresources List reports for the pod's main container, topology included."""
    pod.devices(resource)  # waits until List has the container
    listed = podresources.find_pod(
        podresources.list_pod_resources(str(node.host_path(podresources.DEFAULT_SOCKET))), pod.name, pod.namespace
    )
    assert listed is not None, f"List has no entry for {pod}"
    return [d for d in listed.container("main").devices if d.resource_name == resource]


@pytest.mark.disruptive
@pytest.mark.scenario("DP-X1", "DM-U3", "DP4")
def test_device_on_numa_node_1_is_checkpointed_and_listed_on_node_1_across_a_kubelet_restart(
    node, pod_factory, register_plugin, node_resource
):
    """Devices on NUMA nodes 0 and 1, the plugin preferring the node-1 one: the pod gets dev-1; the checkpoint
    keys it under NUMA node 1 and podresources List reports topology [1] for it, both again after a kubelet
    restart (the plugin re-registered, no new Allocate). manager.go allocateContainerResources builds
    DevicesPerNUMA from each device's Topology.Nodes; pod_devices.go getContainerDevices turns the NUMA key
    back into the TopologyInfo List reports; fromCheckpointData restores the keys at start."""
    devices = [DeviceConfig("dev-0", numa_nodes=[0]), DeviceConfig("dev-1", numa_nodes=[1])]
    plugin = register_plugin(devices, options=PREFERRED, preferred_order=["dev-1"])
    resource = plugin.config.resource_name
    pod = pod_factory("numa", ["sh", "-c", SLEEP], resources={resource: 1})
    pod.wait_running()
    # The kubelet's topology policy is none: no aligned set, so it asks the plugin (manager.go
    # devicesToAllocate -> callGetPreferredAllocationIfAvailable) and takes its answer.
    [granted] = allocations(plugin, 1)
    assert granted == ["dev-1"], f"the kubelet allocated {granted}, the plugin preferred dev-1 (NUMA node 1)"
    wanted_checkpoint = {("main", resource): {1: ["dev-1"]}}
    wanted_list = [podresources.Devices(resource, ("dev-1",), (1,))]

    for when in ("before", "after"):
        if when == "after":
            node.kubelet.restart()
            plugin.wait_for_registration(count=2, timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
            node_resource(resource).wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
        found = _checkpointed_by_numa(node, pod)
        assert found == wanted_checkpoint, (
            f"{when} the kubelet restart the checkpoint holds {found} for {pod}, expected {wanted_checkpoint}"
        )
        listed = _listed(node, pod, resource)
        assert listed == wanted_list, (
            f"{when} the kubelet restart podresources List reports {listed} for {pod} main, expected {wanted_list}"
        )
    allocations(plugin, 1)  # the restart allocated nothing again
    assert pod.log_line(f"{DEVICES_ENV}=") == "dev-1"


@pytest.mark.scenario("DP-X4", "DM-U5")
def test_preferred_allocation_for_an_app_container_reusing_the_init_device_must_include_it(
    pod_factory, register_plugin
):
    """Four devices, the plugin preferring dev-2 then dev-3; an init container asks for 1 device, the app
    container for 2. The init container's GetPreferredAllocation: all four available, nothing to include,
    size 1 (it gets dev-2). The app container's: all four available (the free ones plus the reused dev-2),
    mustInclude [dev-2], size 2, the whole request (it gets dev-2 and dev-3).
    manager.go devicesToAllocate: allocateRemainingFrom(reusableDevices) first, then with no NUMA hint
    (filterByAffinity: every device in noAffinity) callGetPreferredAllocationIfAvailable(...,
    available.Union(allocated), allocated, required)."""
    devices = [f"dev-{i}" for i in range(4)]
    plugin = register_plugin(devices, options=PREFERRED, preferred_order=["dev-2", "dev-3"])
    resource = plugin.config.resource_name
    init = pods.container_spec("init", ["sh", "-c", ECHO], resources={resource: 1})
    pod = pod_factory("reuse", ["sh", "-c", SLEEP], resources={resource: 2}, init_containers=[init])
    pod.wait_running()
    granted = dict(zip(("init", "main"), allocations(plugin, 1, 2), strict=True))

    methods = [c.method for c in plugin.calls()]
    assert methods == [*REGISTRATION_CALLS, *["GetPreferredAllocation", "Allocate"] * 2], (
        f"expected GetPreferredAllocation then Allocate for each container; the plugin saw {methods}"
    )
    asked = []
    for call in plugin.calls("GetPreferredAllocation"):
        [request] = call.request["container_requests"]
        asked.append(
            {
                "available": sorted(request.get("available_deviceIDs") or []),
                "must_include": sorted(request.get("must_include_deviceIDs") or []),
                "size": request.get("allocation_size"),
            }
        )
    expected = [
        {"available": devices, "must_include": [], "size": 1},
        {"available": devices, "must_include": ["dev-2"], "size": 2},
    ]
    assert asked == expected, (
        f"GetPreferredAllocation asked {asked} (init, then main), expected {expected}; Allocate calls: {granted}"
    )
    assert {c: sorted(ids) for c, ids in granted.items()} == {"init": ["dev-2"], "main": ["dev-2", "dev-3"]}, (
        f"the kubelet allocated {granted}, the plugin preferred dev-2 then dev-3 and dev-2 is reused"
    )
    seen = {c: pod.log_line(f"{DEVICES_ENV}=", container=c) for c in granted}
    assert seen == {c: ",".join(ids) for c, ids in granted.items()}, f"containers saw {seen}, allocated {granted}"
