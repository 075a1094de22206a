"""Named waits on what a user sees through the API: node readiness, pod phases, resource counts."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.kube import nodes, pods
from device_conformance.kube.client import Kube
from device_conformance.wait.core import Abort, Pending, until, until_holds

T = TypeVar("T")


def for_node_ready(kube: Kube, node: str, timeout: float = timeouts.NODE_READY) -> None:
    until(
        lambda: True if nodes.ready(kube, node) else Pending(nodes.conditions_summary(kube, node)),
        what=f"node {node} to be Ready",
        timeout=timeout,
    )


def node_ready_in_a_later_status(kube: Kube, node: str) -> Callable[[], str | None]:
    """A check (wait/core.py: None when it holds, else what it saw) that holds once `node` is Ready in a status
    posted after the one the API shows now. Made with the old kubelet gone, it holds for its successor's word
    only (KubeletControl.restart wires it so, through its node_ready seam; fixtures/cluster.py).

    Why not Ready alone: a kubelet restart leaves the node Ready in the API (its Lease and status stay fresh for
    node-monitor-grace-period), so right after one that is the old kubelet's status. The new kubelet posts its
    own at once: fastStatusUpdateOnce returns at its start when the node is already Ready, but the status loop's
    first syncNodeStatus (after one updateRuntimeUp, pkg/kubelet/kubelet.go Run) patches the status, its
    lastStatusReportTime being zero (pkg/kubelet/kubelet_node_status.go tryUpdateNodeStatus), and every status it
    posts stamps Ready's lastHeartbeatTime (pkg/kubelet/nodestatus/setters.go ReadyCondition). That first status
    may say NotReady (the runtime or PLEG not yet checked); Ready then comes with the next sync, which posts it as
    a change (nodeStatusUpdateFrequency: 10 s by default, 1 s on the clusters this suite makes).

    Clocks: lastHeartbeatTime is the node's clock, and is compared only with the heartbeat noted now, from the
    same clock; this machine's clock is never involved. It is whole seconds (metav1.Time): a kubelet that posts
    within the same second as the old one's last status posts, to the API, the same status, and is not seen
    until its next change or report (nodeStatusReportFrequency: 5 min by default, 1 min on ours). So the new
    kubelet must start a second after the old one stopped at the earliest (KubeletControl.restart does)."""
    before = nodes.ready_condition(kube, node)
    noted = before.last_heartbeat_time if before is not None else None

    def stamp(when: datetime | None) -> str:
        return when.isoformat() if when is not None else "none"

    def check() -> str | None:
        ready = nodes.ready_condition(kube, node)
        if ready is None:
            return f"node {node} has no Ready condition"
        seen = f"Ready={ready.status} ({ready.reason}) with lastHeartbeatTime {stamp(ready.last_heartbeat_time)}"
        if noted is not None and (ready.last_heartbeat_time is None or ready.last_heartbeat_time <= noted):
            return f"{seen}: no status posted since the one noted before (lastHeartbeatTime {stamp(noted)})"
        if ready.status != "True":
            return f"{seen}: {ready.message}"
        return None

    return check


def for_pod_phase(
    kube: Kube, namespace: str, name: str, phase: str, timeout: float = timeouts.POD_START_UNNAMED
) -> client.V1Pod:
    """Wait for a phase; stops early when the pod reaches a different terminal phase."""

    def probe() -> client.V1Pod | Pending:
        pod = pods.read(kube, namespace, name)
        if pod.status.phase == phase:
            return pod
        if pod.status.phase in ("Succeeded", "Failed"):
            raise Abort(f"pod {namespace}/{name} ended {pods.summary(pod)} instead of reaching {phase}")
        return Pending(pods.summary(pod))

    return until(probe, what=f"pod {namespace}/{name} to reach phase {phase}", timeout=timeout)


def running_ready(kube: Kube, namespace: str, name: str) -> Callable[[], client.V1Pod | Pending]:
    """A probe: the pod once Running and Ready; Abort when it ended instead."""

    def probe() -> client.V1Pod | Pending:
        pod = pods.read(kube, namespace, name)
        if pod.status.phase in ("Succeeded", "Failed"):
            raise Abort(f"pod {namespace}/{name} ended: {pods.summary(pod)}")
        return pod if pod.status.phase == "Running" and pods.is_ready(pod) else Pending(pods.summary(pod))

    return probe


def for_pod_running_ready(
    kube: Kube, namespace: str, name: str, timeout: float = timeouts.POD_START_UNNAMED
) -> client.V1Pod:
    return until(
        running_ready(kube, namespace, name), what=f"pod {namespace}/{name} to be Running and Ready", timeout=timeout
    )


def for_resource_counts(
    kube: Kube, node: str, resource: str, capacity: int | None, allocatable: int | None, *, timeout: float
) -> None:
    """Wait until the node reports exactly (capacity, allocatable); None means the key is absent.

    No default limit: how long depends on what came before (timeouts.DEVICE_COUNTS, ..._AFTER_RESTART)."""
    wanted = (capacity, allocatable)

    def probe() -> bool | Pending:
        seen = nodes.resource_counts(kube, node, resource)
        return True if seen == wanted else Pending(f"capacity={seen[0]} allocatable={seen[1]}")

    until(
        probe,
        what=f"node {node} to report {resource} capacity={capacity} allocatable={allocatable}",
        timeout=timeout,
    )


def for_object(
    read: Callable[[], T], condition: Callable[[T], bool], describe: Callable[[T], str], *, what: str, timeout: float
) -> T:
    """The object `read` returns once `condition` holds; a timeout shows `describe` of the last one read."""

    def probe() -> T | Pending:
        found = read()
        return found if condition(found) else Pending(describe(found))

    return until(probe, what=what, timeout=timeout)


def _unless_gone(read: Callable[[], T]) -> T | None:
    """What `read` answers, or None once the API object is gone (404)."""
    try:
        return read()
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise


def for_gone(read: Callable[[], T], describe: Callable[[T], str], *, what: str, timeout: float) -> None:
    """Until `read` answers 404: the API object is deleted (finalizers and all)."""

    def gone() -> str | None:
        found = _unless_gone(read)
        return None if found is None else describe(found)

    until_holds(gone, what=what, timeout=timeout)


def for_pod_gone(kube: Kube, namespace: str, name: str, timeout: float = timeouts.POD_GONE) -> None:
    for_gone(
        lambda: pods.read(kube, namespace, name),
        pods.summary,
        what=f"pod {namespace}/{name} to be deleted",
        timeout=timeout,
    )


def for_pod_marked_for_deletion(kube: Kube, namespace: str, name: str, timeout: float) -> None:
    """Until the pod has a deletionTimestamp (or is gone already): deleted, though perhaps still Terminating."""

    def probe() -> bool | Pending:
        pod = _unless_gone(lambda: pods.read(kube, namespace, name))
        if pod is None or pod.metadata.deletion_timestamp is not None:
            return True
        return Pending(f"no deletionTimestamp: {pods.summary(pod)}")

    until(probe, what=f"pod {namespace}/{name} to be marked for deletion", timeout=timeout)


def for_log_line(
    kube: Kube, namespace: str, name: str, prefix: str, container: str = "main", timeout: float = timeouts.POD_LOG_LINE
) -> str:
    """The rest of the first log line that starts with `prefix` (the current container instance's log)."""

    def probe() -> str | Pending:
        text = pods.logs(kube, namespace, name, container)
        for line in text.splitlines():
            if line.startswith(prefix):
                return line[len(prefix) :]
        return Pending(f"log so far: {text[-300:]!r}")

    return until(probe, what=f"a {prefix!r} line in the log of {namespace}/{name} [{container}]", timeout=timeout)


def for_admission_failure(
    kube: Kube, namespace: str, name: str, timeout: float = timeouts.POD_START_UNNAMED
) -> client.V1Pod:
    """Wait for the pod to end Failed (as a kubelet admission rejection does); returns it."""
    return for_pod_phase(kube, namespace, name, "Failed", timeout=timeout)


def for_container_restarts(
    kube: Kube,
    namespace: str,
    name: str,
    container: str = "main",
    at_least: int = 1,
    timeout: float = timeouts.POD_START_UNNAMED,
) -> client.V1Pod:
    """Wait until the kubelet restarted `container` at least `at_least` times; returns the pod."""

    def probe() -> client.V1Pod | Pending:
        pod = pods.read(kube, namespace, name)
        status = next((s for s in pod.status.container_statuses or [] if s.name == container), None)
        return pod if status is not None and status.restart_count >= at_least else Pending(pods.summary(pod))

    times = "" if at_least == 1 else f" {at_least} times"
    return until(probe, what=f"container {container} of {namespace}/{name} to be restarted{times}", timeout=timeout)
