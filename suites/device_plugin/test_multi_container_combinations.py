"""Device plugin behaviours asserted elsewhere with one container, here with several containers of one pod:
podresources Get answers with exactly the containers and devices List reports (an init container, a sidecar
and two app containers, each holding a device), and PreStartContainer is called once per container, each
time with exactly that container's devices.

Proved against one-line breaks of a 1.37.1 tree (K8S_SOURCE; `pytest <this module> -n 1 -m ''
--k8s-source DIR --k8s-version 1.37.1`), each reverted afterwards (the same run passes):

- podresources server_v1.go Get: `range pod.Spec.Containers {` -> `range pod.Spec.Containers[:1] {` (Get
  answers with the first app container only):
  `AssertionError: Get answers [('sidecar', {'dc-1a4e4ea5.example.com/dev': ['dev-3']}), ('main',
  {'dc-1a4e4ea5.example.com/dev': ['dev-0']})] for pod dc-154ef230/getlist-669f6b, List [('sidecar', {...:
  ['dev-3']}), ('main', {...: ['dev-0']}), ('second', {...: ['dev-1']})]; Allocate calls: {'init': ['dev-3'],
  'sidecar': ['dev-3'], 'main': ['dev-0'], 'second': ['dev-1']}`
- devicemanager manager.go GetDeviceRunContainerOptions: `callPreStartContainerIfNeeded(ctx, podUID,
  contName, resource)` -> `..., pod.Spec.Containers[0].Name, resource)` (each container's PreStartContainer
  carries the first container's devices):
  `AssertionError: PreStartContainer calls asked for [['dev-0', 'dev-3'], ['dev-0', 'dev-3']] in turn; the kubelet
  allocated ['dev-0', 'dev-3'] to main and ['dev-1'] to second`
"""

import pytest
from device_conformance.fixtures.device_plugins import DEVICES_ENV, allocations

from device_conformance.framework import REGISTRATION_CALLS, OptionsConfig, podresources, pods, timeouts

pytestmark = pytest.mark.deviceplugin

ECHO = f'echo "{DEVICES_ENV}=${DEVICES_ENV}"'
SLEEP = f"{ECHO}; exec sleep 86400"


def _answered(pod_resources) -> list[tuple[str, dict[str, list[str]]]]:
    """(container, {resource: sorted device IDs}) per container, in the order podresources answered."""
    return [(c.name, {r: sorted(ids) for r, ids in c.device_ids.items()}) for c in pod_resources.containers]


@pytest.mark.since("1.34", "KubeletPodResourcesGet beta and on by default (GA 1.36)")
@pytest.mark.scenario("DP-X2", "DP1", "DM-U5")
def test_podresources_get_answers_exactly_what_list_reports_for_each_container(node, pod_factory, register_plugin):
    """An init container, a sidecar (restartable init container) and two app containers, each asking for one
    device: List and Get both answer with the sidecar and the two app containers (not the init container,
    which has ended), in spec order, each with exactly the device of its own Allocate call.
    server_v1.go: List and Get each walk the restartable init containers, then pod.Spec.Containers
    (getContainerResources per container)."""
    plugin = register_plugin(["dev-0", "dev-1", "dev-2", "dev-3"])
    resource = plugin.config.resource_name
    init = pods.container_spec("init", ["sh", "-c", ECHO], resources={resource: 1})
    sidecar = pods.container_spec("sidecar", ["sh", "-c", SLEEP], resources={resource: 1}, restart_policy="Always")
    second = pods.container_spec("second", ["sh", "-c", SLEEP], resources={resource: 1})
    pod = pod_factory(
        "getlist", ["sh", "-c", SLEEP], resources={resource: 1}, init_containers=[init, sidecar], containers=[second]
    )
    pod.wait_running()
    # The kubelet allocates init containers first, then app containers, each in spec order.
    granted = dict(zip(("init", "sidecar", "main", "second"), allocations(plugin, 1, 1, 1, 1), strict=True))
    for container in ("sidecar", "main", "second"):
        pod.devices(resource, container)  # waits until List has the pod's containers
    expected = [(c, {resource: sorted(granted[c])}) for c in ("sidecar", "main", "second")]

    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    listed = podresources.find_pod(podresources.list_pod_resources(socket), pod.name, pod.namespace)
    assert listed is not None, f"List has no entry for {pod}"
    got = podresources.get_pod_resources(socket, pod.name, pod.namespace)
    assert _answered(listed) == expected, f"List answers {_answered(listed)} for {pod}; Allocate calls: {granted}"
    assert _answered(got) == _answered(listed), (
        f"Get answers {_answered(got)} for {pod}, List {_answered(listed)}; Allocate calls: {granted}"
    )


@pytest.mark.scenario("DP-X3", "DP1")
def test_pre_start_container_is_called_once_per_container_with_its_own_devices(pod_factory, register_plugin):
    """A plugin with pre_start_required, a pod of two app containers asking for 2 and 1 devices: the kubelet
    calls PreStartContainer exactly once per container, after that container's Allocate, each with exactly
    the IDs that container was allocated (devicemanager manager.go GetDeviceRunContainerOptions ->
    callPreStartContainerIfNeeded(podUID, contName, resource): podDevices.containerDevices of that container)."""
    plugin = register_plugin(["dev-0", "dev-1", "dev-2", "dev-3"], options=OptionsConfig(pre_start_required=True))
    resource = plugin.config.resource_name
    second = pods.container_spec("second", ["sh", "-c", SLEEP], resources={resource: 1})
    pod = pod_factory("prestarts", ["sh", "-c", SLEEP], resources={resource: 2}, containers=[second])
    pod.wait_running(timeout=timeouts.POD_START)
    main, other = allocations(plugin, 2, 1)
    seen = {c: pod.log_line(f"{DEVICES_ENV}=", container=c) for c in ("main", "second")}
    assert seen == {"main": ",".join(main), "second": ",".join(other)}, f"containers saw {seen}"

    methods = [c.method for c in plugin.calls()]
    # The kubelet allocates every container at admission, then starts them one by one (PreStartContainer each).
    assert methods == [*REGISTRATION_CALLS, "Allocate", "Allocate", "PreStartContainer", "PreStartContainer"], (
        f"expected two Allocate calls, then one PreStartContainer per container; the plugin saw {methods}"
    )
    # Containers start in spec order (kuberuntime SyncPod: ContainersToStart), so main's call comes first.
    asked = [sorted(call.request.get("devices_ids") or []) for call in plugin.calls("PreStartContainer")]
    assert asked == [sorted(main), sorted(other)], (
        f"PreStartContainer calls asked for {asked} in turn; the kubelet allocated {sorted(main)} to main and "
        f"{sorted(other)} to second"
    )
    assert all(call.done and not call.error for call in plugin.calls("PreStartContainer")), [
        call.summary() for call in plugin.calls("PreStartContainer")
    ]
