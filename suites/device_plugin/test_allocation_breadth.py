"""Allocation breadth: several resources and containers per pod, init-container devices reused by app
containers, GetPreferredAllocation and PreStartContainer honoured, no stale allocation after a failed
one, and a container restart followed by a kubelet restart.

Every verdict rests on the IDs the kubelet sent in the plugins' Allocate calls (`allocations`), compared
with what each container prints and with podresources, never with a list that may be empty.
"""

import calendar

import pytest
from device_conformance.fixtures.device_plugins import DEVICES_ENV, allocations

from device_conformance.framework import (
    ADMISSION_ERROR,
    REGISTRATION_CALLS,
    SINCE_SIDECARS,
    AllocateConfig,
    OptionsConfig,
    Pending,
    pods,
    timeouts,
    until,
)

pytestmark = pytest.mark.deviceplugin


def _echo(*names: str) -> str:
    """Shell that prints `<name>=$<name>` for each env var, one line each."""
    return "; ".join(f'echo "{name}=${name}"' for name in names)


def _status_of(pod, container: str):
    current = pod.read()
    found = [s for s in current.status.container_statuses or [] if s.name == container]
    assert found, f"{pod} has no status of container {container}: {pods.summary(current)}"
    return found[0]


@pytest.mark.scenario("DP1")
def test_each_app_container_gets_its_own_devices_of_each_resource(pod_factory, register_plugin):
    """Two app containers each ask for devices of two resources: one Allocate per container and resource
    with exactly the requested count, no device handed to both containers, and each container sees
    exactly the devices of its own Allocate calls (never the other container's), as does podresources."""
    gpus = register_plugin([f"dev-{i}" for i in range(4)], allocate=AllocateConfig(envs={"DC_A": "{ids}"}))
    nics = register_plugin(["nic-0", "nic-1"], allocate=AllocateConfig(envs={"DC_B": "{ids}"}))
    a, b = gpus.config.resource_name, nics.config.resource_name
    report = f"{_echo('DC_A', 'DC_B')}; exec sleep 86400"
    second = pods.container_spec("second", ["sh", "-c", report], resources={a: 1, b: 1})
    pod = pod_factory("breadth", ["sh", "-c", report], resources={a: 2, b: 1}, containers=[second])
    pod.wait_running()

    # The kubelet allocates container by container, in spec order: main first, then second.
    main_a, second_a = allocations(gpus, 2, 1)
    main_b, second_b = allocations(nics, 1, 1)
    granted = {"main": {a: main_a, b: main_b}, "second": {a: second_a, b: second_b}}
    for resource in (a, b):
        shared = set(granted["main"][resource]) & set(granted["second"][resource])
        assert not shared, f"the kubelet allocated {resource} devices {sorted(shared)} to both containers: {granted}"

    problems = []
    for container, by_resource in granted.items():
        for env, resource in (("DC_A", a), ("DC_B", b)):
            seen = pod.log_line(f"{env}=", container=container)
            wanted = ",".join(by_resource[resource])
            if seen != wanted:
                problems.append(f"{container} sees {env}={seen!r}, its Allocate call for {resource} got {wanted!r}")
            listed = sorted(pod.devices(resource, container))
            if listed != sorted(by_resource[resource]):
                problems.append(f"podresources lists {listed} of {resource} for {container}, allocated {by_resource}")
    assert not problems, "containers do not hold exactly their own devices:\n" + "\n".join(problems)


@SINCE_SIDECARS
@pytest.mark.scenario("DM-U5")
def test_init_devices_are_reused_by_app_containers_but_sidecar_devices_are_not(pod_factory, register_plugin):
    """Init container asks for 2 of 3 devices, then a sidecar and the app container for 1 each: both
    take theirs from the init container's devices (the third device stays free), and the app container
    never gets the sidecar's device (kubelet allocatePodResources: a restartable init container's devices
    leave the reuse set)."""
    plugin = register_plugin(["dev-0", "dev-1", "dev-2"])
    resource = plugin.config.resource_name
    echo = _echo(DEVICES_ENV)
    init = pods.container_spec("init", ["sh", "-c", echo], resources={resource: 2})
    sidecar = pods.container_spec(
        "sidecar", ["sh", "-c", f"{echo}; exec sleep 86400"], resources={resource: 1}, restart_policy="Always"
    )
    pod = pod_factory(
        "reuse", ["sh", "-c", f"{echo}; exec sleep 86400"], resources={resource: 1}, init_containers=[init, sidecar]
    )
    pod.wait_running()
    granted = dict(zip(("init", "sidecar", "main"), allocations(plugin, 2, 1, 1), strict=True))
    from_init = set(granted["init"])
    assert set(granted["sidecar"]) <= from_init and set(granted["main"]) <= from_init, (
        f"the sidecar and the app container must reuse the init container's devices; Allocate calls: {granted}"
    )
    assert granted["main"] != granted["sidecar"], f"the app container got the sidecar's device: {granted}"
    seen = {c: pod.log_line(f"{DEVICES_ENV}=", container=c) for c in granted}
    assert seen == {c: ",".join(ids) for c, ids in granted.items()}, f"containers saw {seen}, allocated {granted}"


@pytest.mark.scenario("DP1")
def test_get_preferred_allocation_is_honoured(pod_factory, register_plugin):
    """A plugin advertising GetPreferredAllocation is asked once, with all 8 devices available and the
    requested size, before Allocate; the container gets exactly the devices it preferred (dev-6, dev-2,
    dev-5: not the first three of any order the kubelet would fall back to on its own)."""
    devices = [f"dev-{i}" for i in range(8)]
    preference = ["dev-6", "dev-2", "dev-5"]
    plugin = register_plugin(
        devices, options=OptionsConfig(get_preferred_allocation_available=True), preferred_order=preference
    )
    resource = plugin.config.resource_name
    pod = pod_factory("preferred", ["sh", "-c", f"{_echo(DEVICES_ENV)}; exec sleep 86400"], resources={resource: 3})
    pod.wait_running()
    [granted] = allocations(plugin, 3)
    assert sorted(granted) == sorted(preference), f"the kubelet allocated {granted}, the plugin preferred {preference}"

    methods = [c.method for c in plugin.calls()]
    assert methods == [*REGISTRATION_CALLS, "GetPreferredAllocation", "Allocate"], (
        f"expected one GetPreferredAllocation before the one Allocate; the plugin saw {methods}"
    )
    [asked] = plugin.calls("GetPreferredAllocation")[0].request["container_requests"]
    shown = {
        "available": sorted(asked.get("available_deviceIDs") or []),
        "must_include": asked.get("must_include_deviceIDs") or [],
        "size": asked.get("allocation_size"),
    }
    assert shown == {"available": devices, "must_include": [], "size": 3}, f"GetPreferredAllocation asked {shown}"
    seen = pod.log_line(f"{DEVICES_ENV}=")
    assert seen == ",".join(granted), f"the container sees {seen!r}, the kubelet allocated {granted}"


# Seconds PreStartContainer is held; the kubelet allows it 30 s (pluginapi.KubeletPreStartContainerRPCTimeoutInSecs).
PRE_START_HOLD = 5


@pytest.mark.scenario("DP1")
def test_pre_start_container_is_called_with_the_devices_before_the_container_starts(pod_factory, register_plugin):
    """With pre_start_required, the kubelet calls PreStartContainer once, with the container's allocated
    IDs, and starts the container only after the call returned: held for a while, the container does not
    start; its startedAt is not before the call's answer."""
    plugin = register_plugin(options=OptionsConfig(pre_start_required=True))
    resource = plugin.config.resource_name
    plugin.block("PreStartContainer")
    pod = pod_factory("prestart", ["sh", "-c", f"{_echo(DEVICES_ENV)}; exec sleep 86400"], resources={resource: 1})
    plugin.wait_for_call("PreStartContainer", timeout=timeouts.POD_START)

    def started(current) -> str | None:
        main = next((s for s in current.status.container_statuses or [] if s.name == "main"), None)
        if main is not None and (main.state.running or main.state.terminated):
            return f"container main started while PreStartContainer was held: {pods.summary(current)}"
        return None

    pod.stays(started, what="not to start container main while PreStartContainer is held", duration=PRE_START_HOLD)
    plugin.unblock("PreStartContainer")
    pod.wait_running()

    [granted] = allocations(plugin, 1)
    methods = [c.method for c in plugin.calls()]
    assert methods == [*REGISTRATION_CALLS, "Allocate", "PreStartContainer"], (
        f"expected Allocate then one PreStartContainer; the plugin saw {methods}"
    )
    [pre_start] = plugin.calls("PreStartContainer")
    asked = pre_start.request.get("devices_ids") or []
    assert sorted(asked) == sorted(granted), f"PreStartContainer asked for {asked}, the kubelet allocated {granted}"
    assert pre_start.done and pre_start.ended_wall, f"PreStartContainer did not finish: {pre_start.summary()}"
    started_at = calendar.timegm(_status_of(pod, "main").state.running.started_at.utctimetuple())
    # startedAt has whole seconds: the container may not have started in a second before the answer.
    assert started_at >= int(pre_start.ended_wall), (
        f"container main started at {started_at}, before PreStartContainer returned at {pre_start.ended_wall:.1f}"
    )
    assert pod.log_line(f"{DEVICES_ENV}=") == ",".join(granted)


def test_failed_preferred_allocation_leaves_no_stale_devices(node, pod_factory, register_plugin):
    """kubernetes#130145's pattern (init and app container, the pod failing admission, force-deleted): the
    app container's GetPreferredAllocation fails after its device from the init container was taken; the
    pod fails admission with the plugin's error, and a new pod asking for both devices is admitted with
    both (no device left marked allocated by the failed attempt). The stale path upstream's fix (#130172)
    closes in 1.37.1 needs NUMA-aligned devices under a topology-manager policy; with the default policy
    (none) this is the reachable part."""
    plugin = register_plugin(options=OptionsConfig(get_preferred_allocation_available=True), preferred_fail_sizes=[2])
    resource = plugin.config.resource_name
    init = pods.container_spec("init", ["true"], resources={resource: 1})
    doomed = pod_factory(
        "doomed", ["sleep", "86400"], resources={resource: 2}, init_containers=[init], node_name=node.name
    )
    failed = doomed.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "fake preferred allocation failure for size 2" in failed.status.message, failed.status.message
    preferred = [
        (c.request["container_requests"][0].get("allocation_size"), bool(c.error))
        for c in plugin.calls("GetPreferredAllocation")
    ]
    assert preferred == [(1, False), (2, True)], (
        "expected the init container's GetPreferredAllocation (size 1) to succeed and main's (size 2) to fail; "
        f"(size, failed) per call: {preferred}"
    )
    allocations(plugin, 1)  # the init container's only
    doomed.force_delete()
    doomed.wait_gone(timeouts.FORCE_DELETED_POD_GONE)

    # Two pods of one device each (a size-2 request would meet the failing preference again): each is
    # admitted only if the failed attempt left neither device marked allocated.
    first = pod_factory("first", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    first.wait_running()
    second = pod_factory("second", ["sleep", "86400"], resources={resource: 1}, node_name=node.name)
    second.wait_running()
    _, mine, yours = allocations(plugin, 1, 1, 1)
    assert sorted(mine + yours) == ["dev-0", "dev-1"], (
        f"after the failed admission the two pods got {mine} and {yours}: the same device twice"
    )


@pytest.mark.disruptive
@pytest.mark.scenario("DP5")
def test_container_restart_then_kubelet_restart_keeps_the_devices(node, pod_factory, node_resource, registered_plugin):
    """Upstream DP5 (#135485): a container that restarted, then a kubelet restart; the pod is not
    re-admitted and failed, the container keeps restarting with the same device (no new Allocate), and
    podresources lists that device."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    run = f"{_echo(DEVICES_ENV)}; sleep 8; exit 1"
    pod = pod_factory("dp5", ["sh", "-c", run], resources={resource: 1}, restart_policy="Always")
    restarted = pod.wait_restarted("main", at_least=1)
    [held] = allocations(plugin, 1)
    count = _status_of(pod, "main").restart_count

    node.kubelet.restart()
    plugin.wait_for_registration(count=2, timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    node_resource(resource).wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)

    # Back-off after two exits is 20 s, then 40 s: two more runs fit in the wait.
    after = pod.wait_restarted("main", at_least=count + 1, timeout=timeouts.POD_START + 60)
    assert after.metadata.uid == restarted.metadata.uid and after.status.phase == "Running", pods.summary(after)

    def current_run() -> str | Pending:
        status = _status_of(pod, "main")
        if status.state.running is None:
            return Pending(f"container main not running: {status.state}")
        return pod.log_line(f"{DEVICES_ENV}=", timeout=5)

    seen = until(current_run, what=f"a run of {pod} main after the kubelet restart", timeout=timeouts.POD_START + 40)
    assert seen == ",".join(held), f"after the restarts the container sees {seen!r}, the kubelet allocated {held}"
    listed = sorted(pod.devices(resource))  # podresources lists a set
    assert listed == sorted(held), (
        f"podresources lists {listed} for main after the restarts, the kubelet allocated {held}"
    )
    allocations(plugin, 1)  # neither restart allocated again
