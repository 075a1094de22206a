"""In-place resize of a device pod: the kubelet applies a new CPU size to a running pod that holds a device,
without allocating its devices again.

Before kubernetes#140224 (1.37.0) a resize ran the device manager's Allocate like a new pod's admission, which
refuses a pod whose allocated device has turned unhealthy: the resize stayed Deferred."""

import pytest
from device_conformance.fixtures.device_plugins import allocations

from device_conformance.framework import RESIZE_RUNS_DEVICE_ALLOCATION, Pending, pods, until

pytestmark = pytest.mark.deviceplugin

RESIZED_CPU = "150m"
RESIZE_APPLIED = 60  # seconds: the kubelet admits (or defers) and actuates a CPU resize within a sync or two


@pytest.mark.since("1.33", "in-place pod resize (InPlacePodVerticalScaling, the resize subresource) on by default")
@pytest.mark.known_bug(RESIZE_RUNS_DEVICE_ALLOCATION)
def test_cpu_resize_of_a_pod_whose_device_turned_unhealthy_is_applied(
    kube, pod_factory, registered_plugin, node_resource, shows_known_bug
):
    """A Burstable pod with one device and 100m CPU; its device turns unhealthy; a resize to 150m CPU is applied
    (the container's status reports 150m) and the plugin is not asked to Allocate again."""
    plugin = registered_plugin
    resource = plugin.config.resource_name
    pod = pod_factory("resize", ["sleep", "86400"], resources={resource: 1, "cpu": "100m"})
    pod.wait_running()
    [[held]] = allocations(plugin, 1)
    plugin.set_health(held, False)
    node_resource(resource).wait_counts(2, 1)

    patch = [
        {"op": "replace", "path": "/spec/containers/0/resources/requests/cpu", "value": RESIZED_CPU},
        {"op": "replace", "path": "/spec/containers/0/resources/limits/cpu", "value": RESIZED_CPU},
    ]
    kube.core.patch_namespaced_pod_resize(pod.name, pod.namespace, patch)

    def settled():
        """('applied', requests) once container main reports the new CPU; ('pending', conditions) once the
        kubelet has deferred or refused the resize (PodResizePending)."""
        current = pod.read()
        main = next((s for s in current.status.container_statuses or [] if s.name == "main"), None)
        requests = (main.resources.requests or {}) if main is not None and main.resources else {}
        if requests.get("cpu") == RESIZED_CPU:
            return "applied", requests
        pending = [
            (c.type, c.reason, c.message) for c in current.status.conditions or [] if c.type == "PodResizePending"
        ]
        if pending:
            return "pending", pending
        return Pending(f"container main reports requests {requests}; {pods.summary(current)}")

    outcome, seen = until(
        settled, what=f"the kubelet to apply or defer the CPU resize of {pod}", timeout=RESIZE_APPLIED
    )
    with shows_known_bug(RESIZE_RUNS_DEVICE_ALLOCATION):  # before the fix: PodResizePending, Deferred
        assert outcome == "applied", f"the kubelet did not apply the CPU resize of {pod} to {RESIZED_CPU}: {seen}"
    allocations(plugin, 1)  # the resize asked the plugin for nothing
