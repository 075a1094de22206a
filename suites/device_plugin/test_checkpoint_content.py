"""What the device manager's checkpoint (kubelet_internal_checkpoint) holds after allocations, read with the
project's codec (kubelet_state.devicemanager), and a forged file the kubelet must refuse.

Expected entries come from the plugins' Allocate calls (the IDs the kubelet chose) and from what the
plugins are configured to answer (the fake's own renderer), never from the file itself.
"""

import uuid

import pytest
from device_conformance.fixtures.device_plugins import CDI_DIR, allocations

from device_conformance.fakes.device_plugin.allocate import container_response
from device_conformance.framework import (
    AllocateConfig,
    DeviceConfig,
    allocate_every_field,
    allocresp,
    devicemanager,
    podresources,
    pods,
    timeouts,
    wait,
    wait_checkpoint_warning,
    watch,
)

pytestmark = [pytest.mark.deviceplugin, pytest.mark.checkpoint]

CHECKPOINT = devicemanager.DEFAULT_PATH


def _expected_response(config: AllocateConfig, ids: list[str], resource: str) -> allocresp.ContainerAllocateResponse:
    """The response the plugin is configured to give for `ids`, in the codec's model."""
    rendered = container_response(config, ids, resource)
    return allocresp.ContainerAllocateResponse(
        envs=dict(rendered.envs),
        mounts=[allocresp.Mount(m.container_path, m.host_path, m.read_only) for m in rendered.mounts],
        devices=[allocresp.DeviceSpec(d.container_path, d.host_path, d.permissions) for d in rendered.devices],
        annotations=dict(rendered.annotations),
        cdi_devices=[c.name for c in rendered.cdi_devices],
    )


@pytest.mark.scenario("DM-U3")
def test_checkpoint_holds_every_allocation_and_every_registered_resource(
    node, pod_factory, register_plugin, node_tmp_path
):
    """Two resources (one without topology, one on NUMA node 0), two containers: the file verifies, holds
    one entry per container and resource with exactly the allocated IDs under the right NUMA key (-1 for
    devices without topology), each entry's Allocate response round-trips every field (envs, mounts,
    device nodes, annotations, CDI devices), and RegisteredDevices lists every device of both resources."""
    for device in ("dev-0", "dev-1", "dev-2"):
        (node_tmp_path / device).mkdir()
    full = allocate_every_field("DC_A", node_tmp_path, "dc.example.com/devices")
    gpus = register_plugin(("dev-0", "dev-1", "dev-2"), allocate=full, cdi_dir=str(node.host_path(CDI_DIR)))
    numa = AllocateConfig(envs={"DC_B": "{ids}"})
    nics = register_plugin(
        [DeviceConfig("nic-0", numa_nodes=[0]), DeviceConfig("nic-1", numa_nodes=[0])], allocate=numa
    )
    a, b = gpus.config.resource_name, nics.config.resource_name
    second = pods.container_spec("second", ["sleep", "86400"], resources={a: 1})
    pod = pod_factory("recorded", ["sleep", "86400"], resources={a: 2, b: 1}, containers=[second])
    pod.wait_running()
    main_a, second_a = allocations(gpus, 2, 1)
    [main_b] = allocations(nics, 1)

    parsed = devicemanager.parse(node.read_file(CHECKPOINT))
    assert parsed.valid and parsed.format == "v2", parsed.reason
    found = {
        (e.container_name, e.resource_name): (
            {numa_node: sorted(ids or []) for numa_node, ids in (e.device_ids or {}).items()},
            allocresp.decode_alloc_resp(e.alloc_resp),
        )
        for e in parsed.checkpoint.entries or []
        if e.pod_uid == pod.uid
    }
    expected = {
        ("main", a): ({devicemanager.NO_TOPOLOGY: sorted(main_a)}, _expected_response(full, main_a, a)),
        ("second", a): ({devicemanager.NO_TOPOLOGY: sorted(second_a)}, _expected_response(full, second_a, a)),
        ("main", b): ({0: sorted(main_b)}, _expected_response(numa, main_b, b)),
    }
    assert set(found) == set(expected), f"checkpoint entries of {pod}: {sorted(found)}, expected {sorted(expected)}"
    problems = [
        f"{key}: checkpoint has {found[key]}, expected {wanted}"
        for key, wanted in expected.items()
        if found[key] != wanted
    ]
    assert not problems, "checkpoint entries that do not match the allocation:\n" + "\n".join(problems)
    registered = {
        r: sorted(ids or []) for r, ids in (parsed.checkpoint.registered_devices or {}).items() if r in (a, b)
    }
    wanted = {a: ["dev-0", "dev-1", "dev-2"], b: ["nic-0", "nic-1"]}
    assert registered == wanted, f"RegisteredDevices of the two resources: {registered}, expected {wanted}"


@pytest.mark.disruptive
def test_forged_checkpoint_with_a_stale_checksum_leaves_no_trace(
    kube, node, node_resource, pod_factory, register_plugin
):
    """A checkpoint forged while the kubelet is down (an entry for a pod that does not exist, a resource
    no plugin serves), its checksum left as it was: the kubelet refuses the file (logs that it could not
    read it), the forged resource never shows in node status, podresources never lists the forged pod, and
    the registered plugin's resource comes back as before."""
    plugin = register_plugin(timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    resource = plugin.config.resource_name
    holder = pod_factory("holder", ["sleep", "86400"], resources={resource: 1})
    holder.wait_running()
    allocations(plugin, 1)
    forged_resource = f"dc-{uuid.uuid4().hex[:8]}.example.com/forged"
    ghost = str(uuid.uuid4())

    with node.kubelet.stopped():
        parsed = devicemanager.parse(node.read_file(CHECKPOINT))
        assert parsed.valid, parsed.reason
        cp = parsed.checkpoint
        cp.entries = [
            *(cp.entries or []),
            devicemanager.PodDevicesEntry(
                ghost, "ghost", forged_resource, {devicemanager.NO_TOPOLOGY: ["ghost-0"]}, b""
            ),
        ]
        cp.registered_devices = {**(cp.registered_devices or {}), forged_resource: ["ghost-0"]}
        node.write_file(CHECKPOINT, devicemanager.encode_v2(cp, checksum=parsed.stored_checksum))
        mark = node.kubelet.log_mark()
    wait.for_node_ready(kube, node.name)

    wait_checkpoint_warning(node, mark)
    forged_counts = node_resource(forged_resource)
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))

    def traced() -> str | None:
        if forged_counts.counts() != (None, None):
            return f"node status reports the forged resource {forged_resource}: {forged_counts.counts()}"
        listed = [
            (p.namespace, p.name, c.name, c.device_ids)
            for p in podresources.list_pod_resources(socket)
            for c in p.containers
            if forged_resource in c.device_ids or c.name == "ghost"
        ]
        return f"podresources lists the forged allocation: {listed}" if listed else None

    no_trace = watch(
        traced, what="no trace of the forged checkpoint entry", duration=timeouts.DEVICE_COUNTS_AFTER_RESTART
    )
    plugin.wait_for_registration(count=2, timeout=timeouts.DEVICE_COUNTS_AFTER_RESTART)
    node_resource(resource).wait_counts(2, 2, timeouts.DEVICE_COUNTS_AFTER_RESTART)
    no_trace.holds()
    written = devicemanager.parse(node.read_file(CHECKPOINT))
    assert written.valid, written.reason
    left = [e for e in written.checkpoint.entries or [] if e.pod_uid == ghost]
    assert not left and forged_resource not in (written.checkpoint.registered_devices or {}), (
        f"the kubelet wrote the forged data back: entries {left}, registered {written.checkpoint.registered_devices}"
    )
