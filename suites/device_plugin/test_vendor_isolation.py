"""Black-box isolation: a container without the resource sees none of the device, and the container holding it
sees exactly its allocation, with a device plugin our fake's or a vendor's (vendor mode, fixtures/vendor.py
`subject_plugin`).

What a container must see is read from the kubelet, not from the plugin: the device manager's checkpoint
(kubelet_internal_checkpoint) keeps, per pod UID, container and resource, the plugin's Allocate answer (AllocResp,
pkg/kubelet/cm/devicemanager/checkpoint/checkpoint.go), whose envs, mounts and device specs the kubelet hands the
runtime for that container only (pkg/kubelet/cm/devicemanager/manager.go GetDeviceRunContainerOptions), and whose
CDI devices the runtime resolves in the node's CDI specs. The kubelet calls Allocate only for a container that
requests the resource (manager.go allocateContainerResources). What a container sees is printed from inside it
(fixtures/vendor_isolation.py PROBE: /proc/1/environ, every device node with its major:minor, /proc/self/mountinfo).

Not judged, because no black box can tell it from a plugin that keeps the contract: an answer that names another
device than the one allocated (device IDs are the plugin's own names) or the same devices for every container (a
plugin whose devices are slots of one shared device answers so). Nor are device nodes that no answer names in the
container holding the device: a runtime hook may add them from an env var of the answer (nvidia-container-runtime's
legacy mode adds /dev/nvidia* for NVIDIA_VISIBLE_DEVICES) and a Mount may carry any host path, so they are
reported (the test's `device_nodes_not_named` property), never failed.

No plugin defect fails test_container_without_the_resource_sees_none_of_the_device: the kubelet calls Allocate
only for a container that requests the resource and hands the answer to that container only. It was seen failing
with the pod built to give container plain the resource too: `assert not problems` ("container plain sees env
['DC_DEVICES=dev-1'] of what container main was given: a container that asks for none of it sees none of the
device"). The fake's `allocate-mounts-host-dev` defect (every answer mounts the node's /dev) passes it, with the
device nodes under /host/dev reported.
"""

import pytest
from device_conformance.fixtures.device_plugin_blackbox import one_device
from device_conformance.fixtures.vendor import allocatable_ids, cdi_specs, offered_devices
from device_conformance.fixtures.vendor_isolation import (
    answer_items,
    judge_holder,
    judge_without,
    note_other_nodes,
    pod_with_plain,
    seen,
)

from device_conformance.framework import allocresp, device_checkpoint

pytestmark = [pytest.mark.deviceplugin, pytest.mark.vendor_blackbox("device-plugin")]


def _answers(node, pod, resource):
    """{container: its Allocate answer} the kubelet's checkpoint keeps for `pod` and `resource`."""
    entries = device_checkpoint(node).entries or []
    return {
        e.container_name: allocresp.decode_alloc_resp(e.alloc_resp)
        for e in entries
        if e.pod_uid == pod.uid and e.resource_name == resource
    }


def test_container_without_the_resource_sees_none_of_the_device(
    kube, node, pod_factory, subject_plugin, request, tmp_path
):
    """One pod, container main asking for one device, container plain for none: plain gets no device (podresources,
    the checkpoint), main sees exactly the env lines, device nodes and mount points of the Allocate answer the
    checkpoint keeps for it (CDI devices resolved in the node's CDI specs); plain sees none of them. Device nodes
    main sees beyond its answer and a container without devices are reported, not judged. NOT APPLICABLE when the
    answer gives nothing a container could be seen to see (annotations only)."""
    resource = subject_plugin.resource_name
    offered_devices(kube, node, resource)
    offered = allocatable_ids(node, resource)
    pod = pod_with_plain(pod_factory, "iso", resource)
    pod.wait_running()
    held = one_device(pod, resource, offered)
    assert pod.devices(resource, "plain") == [], f"podresources lists {resource} for container plain of {pod}"

    answers = _answers(node, pod, resource)
    assert sorted(answers) == ["main"], (
        f"the kubelet's checkpoint keeps Allocate answers of {resource} for containers {sorted(answers)} of {pod}, "
        "expected ['main']: the kubelet allocates only for a container that requests the resource"
    )
    answer = answers["main"]
    request.node.user_properties.append(("allocate_answer", repr(answer)))
    expected = answer_items(answer, cdi_specs(node, tmp_path / "cdi") if answer.cdi_devices else None)
    if expected.empty:
        pytest.skip(
            f"NOT APPLICABLE: the Allocate answer for {held} gives no env, device node or mount a container could "
            f"be seen to see (annotations {sorted(answer.annotations)})"
        )
    main, plain = seen(pod, "main"), seen(pod, "plain")
    problems = judge_holder(f"container main (holding {held})", expected, main)
    request.node.user_properties.append(
        ("device_nodes_not_named", note_other_nodes("container main", main, plain, expected))
    )
    problems += judge_without("container plain", "container main", expected, plain)
    assert not problems, "\n".join(problems)
