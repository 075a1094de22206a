"""A device whose Allocate is in flight stays taken: the device manager marks the devices it picked in
allocatedDevices and calls the plugin's Allocate outside its lock, recording the pod's devices (podDevices) only
when the answer comes. UpdateAllocatedDevices, which podresources List also calls, rebuilt allocatedDevices from
podDevices alone whenever a pod had become inactive, so an allocation in flight at that moment lost its devices:
the next pod could be given the same device (kubernetes#137534, pkg/kubelet/cm/devicemanager/manager.go)."""

import pytest

from device_conformance.framework import INFLIGHT_ALLOCATION_DROPPED_ON_REBUILD, OptionsConfig

pytestmark = [
    pytest.mark.deviceplugin,
    # the test knows the ended pod's termination is complete when List stops listing it (active pods only,
    # KubeletPodResourcesListUseActivePods: expectations/deviceplugin.py PODRESOURCES_LISTS_TERMINATED_PODS)
    pytest.mark.since("1.34", "podresources List answers for active pods only from 1.34 (kubernetes#132028)"),
]

# The ending pod's grace period: `sleep` as PID 1 ignores SIGTERM, so its termination completes (in its pod worker,
# without the kubelet's sync loop, which the held Allocate blocks) when the grace period ends.
GRACE = 6
SLEEP = ["sleep", "86400"]


@pytest.mark.known_bug(INFLIGHT_ALLOCATION_DROPPED_ON_REBUILD)
def test_device_of_an_allocation_in_flight_is_not_given_to_the_next_pod(
    kube, namespace, pod_factory, register_plugin, node_resource, shows_known_bug
):
    """A pod ends while another pod's Allocate is held and podresources List runs: the held allocation keeps its
    device, and the pod after it gets the other one. The plugin prefers dev-0 (GetPreferredAllocation), so a
    device manager that lost the held dev-0 hands it out again."""
    plugin = register_plugin(
        ("dev-0", "dev-1"),
        options=OptionsConfig(get_preferred_allocation_available=True),
        preferred_order=["dev-0", "dev-1"],
    )
    resource = plugin.config.resource_name
    counts = node_resource(resource)
    plugin.set_health("dev-0", False)  # the ending pod gets dev-1, the pod after it the preferred dev-0
    counts.wait_counts(2, 1)
    ending = pod_factory("ending", SLEEP, resources={resource: 1})
    ending.wait_running()
    assert ending.devices(resource) == ["dev-1"]
    plugin.set_health("dev-0", True)
    counts.wait_counts(2, 2)

    plugin.block("Allocate")
    try:
        kube.core.delete_namespaced_pod(ending.name, namespace, grace_period_seconds=GRACE)
        held = pod_factory("held", SLEEP, resources={resource: 1})
        plugin.wait_for_blocked("Allocate")
        assert plugin.allocations()[-1] == [["dev-0"]], f"Allocate calls: {plugin.allocations()}"
        # List answers for active pods only (1.34+): the ending pod leaves it once its termination completed, and
        # the same List call ran UpdateAllocatedDevices with that pod to remove.
        ending.wait_podresources_gone(timeout=GRACE + 30)
    finally:
        plugin.unblock("Allocate")
    held.wait_running()
    assert held.devices(resource) == ["dev-0"]
    ending.wait_gone()
    following = pod_factory("following", SLEEP, resources={resource: 1})
    following.wait_running()
    with shows_known_bug(INFLIGHT_ALLOCATION_DROPPED_ON_REBUILD):
        assert following.devices(resource) == ["dev-1"], (
            f"the pod after the held allocation got {following.devices(resource)}; the held pod has "
            f"{held.devices(resource)}"
        )
