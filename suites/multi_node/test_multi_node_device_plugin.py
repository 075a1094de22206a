"""A device plugin on one node of several: pods that request its resource land on that node, and the other
nodes never report the resource (the exact key absent from capacity and allocatable)."""

import pytest
from device_conformance.fixtures.device_plugins import unique_resource

from device_conformance.framework import NodeResource, timeouts, watch

pytestmark = [pytest.mark.deviceplugin, pytest.mark.nodes(2)]


def test_plugin_on_one_node_gets_the_pods_and_no_other_node_reports_its_resource(
    kube, cluster_nodes, device_plugin, pod_factory
):
    """Plugin on the first node in the provider's order (kind: the worker). The absence is held from before the
    plugin starts for DEVICE_COUNTS, the limit in which a registered plugin's devices reach node status, and
    checked again after the pods ran: a kubelet that had taken the registration would have reported by then."""
    home = cluster_nodes.nodes[0]
    others = cluster_nodes.others(home.name)
    resource = unique_resource()

    def reported_elsewhere():
        seen = {n.name: NodeResource(kube, n.name, resource).counts() for n in others}
        wrong = {name: counts for name, counts in seen.items() if counts != (None, None)}
        return None if not wrong else f"capacity/allocatable of {resource} on {wrong}"

    absent = watch(
        reported_elsewhere, what=f"no node but {home.name} to report {resource}", duration=timeouts.DEVICE_COUNTS
    )
    plugin = device_plugin(resource, ("dev-0", "dev-1"), on=home)
    NodeResource(kube, home.name, resource).wait_counts(2, 2)

    placed = [
        pod_factory("wants-dev", ["sleep", "86400"], resources={resource: 1}, **cluster_nodes.pod_options())
        for _ in range(2)
    ]
    bound = [p.wait_running().spec.node_name for p in placed]
    assert bound == [home.name, home.name], f"pods requesting {resource} bound to {bound}"
    held = sorted(d for p in placed for d in p.devices(resource))
    assert held == ["dev-0", "dev-1"], f"devices podresources on {home.name} lists for the two pods: {held}"
    assert len(plugin.calls("Allocate")) == 2, f"Allocate calls: {plugin.calls('Allocate')}"
    absent.holds()
    assert reported_elsewhere() is None, reported_elsewhere()
