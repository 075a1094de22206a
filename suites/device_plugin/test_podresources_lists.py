"""What podresources List and Get report: the pods that hold resources now, never a pod that has ended.

The kubelet's resource managers account only for active pods (a Succeeded or Failed pod's devices go back
to the pool at the next allocation), so an answer about an ended pod describes resources nobody holds
(List: kubernetes#119423, fixed by #132028 in 1.34.0, KubeletPodResourcesListUseActivePods, default on; Get:
fixed by #135485 in 1.36.0, 1.35.4 and 1.34.7)."""

import pytest
from device_conformance.fixtures.device_plugins import allocations

from device_conformance.framework import (
    PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD,
    PODRESOURCES_LISTS_TERMINATED_PODS,
    SINCE_PODRESOURCES_GET,
    podresources,
)

pytestmark = pytest.mark.deviceplugin


@pytest.mark.known_bug(PODRESOURCES_LISTS_TERMINATED_PODS)
def test_podresources_lists_no_pod_that_has_ended(node, namespace, pod_factory, registered_plugin, shows_known_bug):
    """A device pod that ran to completion, then a running device pod: List names exactly the running pod of
    this namespace, with exactly the device its Allocate call gave it."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    done = pod_factory("done", ["true"], resources={resource: 1})
    done.wait_phase("Succeeded")
    [first] = allocations(plugin, 1)
    running = pod_factory("running", ["sleep", "86400"], resources={resource: 1})
    running.wait_running()
    _, granted = allocations(plugin, 1, 1)
    assert running.devices(resource) == granted, (
        f"podresources lists {running.devices(resource)} for {running}, the kubelet allocated {granted}"
    )

    listed = {
        entry.name: entry.containers
        for entry in podresources.list_pod_resources(str(node.host_path(podresources.DEFAULT_SOCKET)))
        if entry.namespace == namespace
    }
    with shows_known_bug(PODRESOURCES_LISTS_TERMINATED_PODS):  # before the fix: the Succeeded pod is listed too
        assert sorted(listed) == [running.name], (
            f"podresources lists pods {sorted(listed)} of {namespace}, only {running.name} is running "
            f"({done.name} Succeeded holding {first}); entries: {listed}"
        )


@SINCE_PODRESOURCES_GET
@pytest.mark.known_bug(PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD)
def test_podresources_get_answers_no_pod_that_has_ended(node, pod_factory, registered_plugin, shows_known_bug):
    """Get answers for a running device pod with exactly its device, and with "not found" for a device pod that
    ran to completion (the kubelet no longer counts it: its device goes to the next pod)."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    socket = str(node.host_path(podresources.DEFAULT_SOCKET))
    running = pod_factory("running", ["sleep", "86400"], resources={resource: 1})
    running.wait_running()
    [held] = allocations(plugin, 1)
    got = podresources.get_pod_resources(socket, running.name, running.namespace).container("main").device_ids
    assert got == {resource: held}, f"Get answers {got} for {running} main, the kubelet allocated {held}"

    done = pod_factory("done", ["true"], resources={resource: 1})
    done.wait_phase("Succeeded")
    _, first = allocations(plugin, 1, 1)
    with shows_known_bug(PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD):  # before the fix: its containers and device
        try:
            ended = podresources.get_pod_resources(socket, done.name, done.namespace)
        except podresources.PodResourcesError as exc:
            assert f"pod {done.name} in namespace {done.namespace} not found" in str(exc), str(exc)
        else:
            raise AssertionError(f"Get answers for {done}, Succeeded (it held {first}): {ended}")
