"""Admission of pods that request devices: Allocate responses reach the container; failures fail the pod.

The kubelet calls Allocate once per container that requests devices, with exactly the requested number
of IDs (`allocations` checks that contract and returns the IDs); what the pod and podresources show is
compared with those IDs, never with a list that may be empty.
"""

import re

import pytest
from device_conformance.fixtures.device_plugins import CDI_DIR, DEVICES_ENV, allocations

from device_conformance.fakes.device_plugin import cdi_env
from device_conformance.framework import (
    ADMISSION_ERROR,
    PODRESOURCES_OMITS_SIDECARS,
    PODRESOURCES_SIDECAR_ENTRY,
    REGISTRATION_CALLS,
    SINCE_CDI_DEVICES_IN_ALLOCATE,
    SINCE_SIDECARS,
    AllocateConfig,
    MountConfig,
    allocate_every_field,
    env_lines_script,
    outcome,
    pods,
)

pytestmark = pytest.mark.deviceplugin

ECHO_DEVICES = f'echo "devices=${DEVICES_ENV}"'  # what registered_plugin's Allocate put into the env


def _main_status(pod):
    """The pod's status of container "main" (explains itself when there is none)."""
    current = pod.read()
    found = [s for s in current.status.container_statuses or [] if s.name == "main"]
    assert found, f"{pod} has no status of container main: {pods.summary(current)}"
    return found[0]


@pytest.mark.scenario("DP1")
def test_pod_gets_a_device_env_from_allocate_and_podresources_agrees(pod_factory, node_resource, registered_plugin):
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory("dev", ["sh", "-c", f"{ECHO_DEVICES}; exec sleep 86400"], resources={resource: 1})
    pod.wait_running()
    [granted] = allocations(plugin, 1)
    seen = pod.log_line("devices=")
    assert seen == ",".join(granted), f"the container sees devices {seen!r}, the kubelet allocated {granted}"

    entry = pod.wait_podresources()
    listed = entry.container("main").device_ids
    assert listed == {resource: granted}, f"podresources lists {listed} for main, the kubelet allocated {granted}"
    methods = [c.method for c in plugin.calls()]
    assert methods == [*REGISTRATION_CALLS, "Allocate"], (
        f"a plugin advertising neither PreStartContainer nor GetPreferredAllocation gets exactly one Allocate "
        f"after registering; it saw {methods}"
    )
    node_resource(resource).wait_counts(2, 2)


@pytest.mark.scenario("DM-U4")
def test_over_request_fails_admission(node, pod_factory, registered_plugin):
    """Bound straight to the node (bypassing the scheduler), a pod asking for more devices than exist
    fails kubelet admission for good: Failed, UnexpectedAdmissionError, no Allocate call."""
    resource = registered_plugin.config.resource_name
    pod = pod_factory("greedy", ["sleep", "86400"], resources={resource: 3}, node_name=node.name)
    failed = pod.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message, failed.status.message
    assert "Requested: 3, Available: 2" in failed.status.message, failed.status.message
    methods = [c.method for c in registered_plugin.calls()]
    assert methods == REGISTRATION_CALLS, (
        f"no RPC is due for a pod the kubelet cannot satisfy; the plugin saw {methods}"
    )


def test_allocate_error_fails_admission_with_the_plugins_message(pod_factory, registered_plugin):
    plugin = registered_plugin
    resource = plugin.config.resource_name
    plugin.fail("Allocate", "INTERNAL", "fake allocate failure")
    pod = pod_factory("doomed", ["sleep", "86400"], resources={resource: 1})
    failed = pod.wait_admission_failure()
    assert failed.status.reason == ADMISSION_ERROR, pods.summary(failed)
    assert "Allocate failed due to" in failed.status.message, failed.status.message
    assert "fake allocate failure" in failed.status.message, failed.status.message
    sizes = [[len(ids) for ids in requests] for requests in plugin.allocations()]
    assert sizes == [[1]], (
        "expected one Allocate call with one container request for one device, not retried after it failed; "
        f"the plugin saw {[c.summary() for c in plugin.calls('Allocate')]} with request sizes {sizes}"
    )


def test_allocate_mount_is_visible_in_the_container(pod_factory, register_plugin, node_tmp_path):
    """A per-device host directory the Allocate response mounts shows up read-only in the container."""
    for device in ("dev-0", "dev-1"):
        (node_tmp_path / device).mkdir()
        (node_tmp_path / device / "identity").write_text(f"I am {device}\n")
    mount = MountConfig(container_path="/dev-info/{id}", host_path=f"{node_tmp_path}/{{id}}", read_only=True)
    plugin = register_plugin(("dev-0", "dev-1"), allocate=AllocateConfig(mounts=[mount]))
    resource = plugin.config.resource_name
    script = 'for f in /dev-info/*/identity; do echo "seen=$(cat $f)"; done; '
    script += 'for d in /dev-info/*; do touch "$d/x" 2>/dev/null || echo ro=yes; done'
    pod = pod_factory("mount", ["sh", "-c", f"{script}; exec sleep 86400"], resources={resource: 1})
    pod.wait_running()
    [[device]] = allocations(plugin, 1)
    seen = pod.log_line("seen=")
    assert seen == f"I am {device}", f"the container reads {seen!r} through the mount of {device}"
    assert pod.log_line("ro=") == "yes", "the read-only mount was writable"


# What the container prints, one line per field of the Allocate response; busybox's sh, grep, awk, ls.
FIELD_REPORT = " ; ".join(
    [
        f'echo "env=${DEVICES_ENV}"',
        # From /proc, not `env`: the shell drops names that are not shell names (kube/container_env.py).
        f"echo \"cdi=$({env_lines_script('DC_CDI_')} | tr '\\n' ' ')\"",
        # mountinfo fields 5 and 6: mount point and per-mount options of the Allocate mounts.
        "echo \"mountinfo=$(grep ' /dev-info/' /proc/self/mountinfo | awk '{print $5, $6}' | tr '\\n' ' ')\"",
        'echo "identity=$(cat /dev-info/*/identity)"',
        # ls -l: type letter, "major, minor" and path of each device node.
        "echo \"devnode=$(ls -l /dev/dc-* | awk '{print substr($1, 1, 1), $5 $6, $NF}')\"",
        "exec sleep 86400",
    ]
)
ANNOTATION = "dc.example.com/devices"


@pytest.mark.scenario("DP1", "DP2")
@SINCE_CDI_DEVICES_IN_ALLOCATE
def test_each_field_of_the_allocate_response_reaches_the_container(node, pod_factory, register_plugin, node_tmp_path):
    """Envs, mounts, device nodes and CDI devices of the Allocate response, each seen from inside the
    container, and its annotations as the container's annotations in the runtime (CRI ContainerStatus):
    every field is checked and every one that did not arrive is reported."""
    for device in ("dev-0", "dev-1"):
        (node_tmp_path / device).mkdir()
        (node_tmp_path / device / "identity").write_text(f"I am {device}\n")
    allocate = allocate_every_field(DEVICES_ENV, node_tmp_path, ANNOTATION)
    plugin = register_plugin(("dev-0", "dev-1"), allocate=allocate, cdi_dir=str(node.host_path(CDI_DIR)))
    resource = plugin.config.resource_name
    pod = pod_factory("fields", ["sh", "-c", FIELD_REPORT], resources={resource: 1})
    pod.wait_running()
    [[device]] = allocations(plugin, 1)

    expected = {  # field -> what the container prints for it
        "env": device,
        "cdi": cdi_env(device),
        "mountinfo": f"/dev-info/{device} ro",  # the mount point, read-only (further options may follow "ro,")
        "identity": f"I am {device}",  # the file of that device's host directory
        "devnode": f"c 1,3 /dev/dc-{device}",  # /dev/null's numbers, under the container path
    }
    problems = []
    for field, wanted in expected.items():
        seen = pod.log_line(f"{field}=").strip()
        matches = re.fullmatch(re.escape(wanted) + r"(,\S*)?", seen) if field == "mountinfo" else seen == wanted
        if not matches:
            problems.append(f"{field}: expected {wanted!r} in the container, it printed {seen!r}")
    annotations = node.container_annotations(_main_status(pod).container_id or "")
    if annotations.get(ANNOTATION) != device:
        problems.append(f"annotations: expected {ANNOTATION}={device} on the container, the runtime has {annotations}")
    assert not problems, f"Allocate response fields for {device} that did not reach the container:\n" + "\n".join(
        problems
    )


@SINCE_SIDECARS
@pytest.mark.scenario("DP10")
def test_init_container_device_is_reused_by_the_sidecar_not_the_app(pod_factory, registered_plugin, kube_version):
    """Init, sidecar (restartable init) and app container each ask for 1 of 2 devices: one Allocate per
    container, the init container's device handed on to the sidecar, the app container given the other
    one, and podresources lists the sidecar and the app container with one device each (from 1.30; before,
    it lists the app container only: PODRESOURCES_SIDECAR_ENTRY)."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    init = pods.container_spec("init", ["sh", "-c", ECHO_DEVICES], resources={resource: 1})
    sidecar = pods.container_spec(
        "sidecar", ["sh", "-c", f"{ECHO_DEVICES}; exec sleep 86400"], resources={resource: 1}, restart_policy="Always"
    )
    pod = pod_factory(
        "sidecar",
        ["sh", "-c", f"{ECHO_DEVICES}; exec sleep 86400"],
        resources={resource: 1},
        init_containers=[init, sidecar],
    )
    pod.wait_running()
    granted = dict(zip(("init", "sidecar", "main"), allocations(plugin, 1, 1, 1), strict=True))
    assert granted["init"] == granted["sidecar"] != granted["main"], f"Allocate calls per container: {granted}"
    seen = {c: pod.log_line("devices=", container=c) for c in ("init", "sidecar", "main")}
    assert seen == {c: ",".join(ids) for c, ids in granted.items()}, f"containers saw {seen}, allocated {granted}"

    entry = pod.wait_podresources()
    listed = {c.name: c.device_ids.get(resource) for c in entry.containers if c.device_ids}
    wanted = {"sidecar": granted["sidecar"], "main": granted["main"]}
    if outcome(PODRESOURCES_SIDECAR_ENTRY, kube_version) == PODRESOURCES_OMITS_SIDECARS:
        del wanted["sidecar"]
    assert listed == wanted, (
        f"podresources lists {listed} for the running containers, expected {wanted} on {kube_version} "
        f"({PODRESOURCES_SIDECAR_ENTRY.at(kube_version).outcome}); the kubelet allocated {granted}"
    )


@pytest.mark.scenario("DP-A1")
def test_pod_is_listed_without_devices_while_allocate_is_in_flight(pod_factory, registered_plugin):
    """podresources must not report devices the plugin has not allocated yet."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    plugin.block("Allocate")
    pod = pod_factory("inflight", ["sleep", "86400"], resources={resource: 1})
    plugin.wait_for_call("Allocate")
    # Allocate stays blocked until unblocked below, so the first listing must already hold no devices.
    entry = pod.wait_podresources()
    held = {c.name: c.device_ids for c in entry.containers if c.device_ids}
    assert not held, f"devices reported while Allocate is blocked: {held}"

    plugin.unblock("Allocate")
    pod.wait_running()
    [granted] = allocations(plugin, 1)
    listed = sorted(pod.devices(resource))  # podresources lists a set
    assert listed == sorted(granted), f"podresources lists {listed} for main, the kubelet allocated {granted}"


@pytest.mark.scenario("DP3")
def test_restarted_container_keeps_its_device(pod_factory, registered_plugin):
    """A container that exits and is restarted by the kubelet gets the same device, without a new
    Allocate call."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory(
        "restart", ["sh", "-c", f"{ECHO_DEVICES}; exit 1"], resources={resource: 1}, restart_policy="Always"
    )
    first = pod.log_line("devices=")
    pod.wait_restarted("main")
    [granted] = allocations(plugin, 1)  # a container restart must reuse the pod's allocation
    assert first == ",".join(granted), f"the first run saw {first!r}, the kubelet allocated {granted}"
    again = pod.log_line("devices=")
    assert again == first, f"the restarted container saw {again!r}, the first run {first!r}"
    listed = sorted(pod.devices(resource))  # podresources lists a set
    assert listed == sorted(granted), f"podresources lists {listed} for main, the kubelet allocated {granted}"
