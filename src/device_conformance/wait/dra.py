"""Named waits on resource.k8s.io objects: claims allocated / reserved / gone, slices present / gone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.kube import dra, pods
from device_conformance.kube.client import Kube
from device_conformance.wait.core import Pending, until
from device_conformance.wait.kube import for_gone, for_object, running_ready
from device_conformance.wait.progress import Budget, of_values, until_progressing

T = TypeVar("T")


def for_generated_claim(kube: Kube, namespace: str, pod: str, claim: str, timeout: float = timeouts.CLAIM) -> str:
    """The name of the ResourceClaim generated from a template for pod-level claim `claim`."""

    def probe() -> str | Pending:
        status = pods.read(kube, namespace, pod).status
        for entry in status.resource_claim_statuses or []:
            if entry.name == claim and entry.resource_claim_name:
                return entry.resource_claim_name
        return Pending(f"resourceClaimStatuses={status.resource_claim_statuses}")

    return until(probe, what=f"the claim generated for {namespace}/{pod} claim {claim!r}", timeout=timeout)


def for_claim(
    kube: Kube,
    api: str,
    namespace: str,
    name: str,
    condition: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float = timeouts.CLAIM,
) -> dict[str, Any]:
    return for_object(
        lambda: dra.get_claim(kube, api, namespace, name),
        condition,
        dra.claim_summary,
        what=f"ResourceClaim {namespace}/{name} {what}",
        timeout=timeout,
    )


def reserved_uids(claim: dict[str, Any]) -> list[str]:
    return [r.get("uid") for r in (claim.get("status") or {}).get("reservedFor") or []]


def for_claim_gone(kube: Kube, api: str, namespace: str, name: str, timeout: float = timeouts.CLAIM) -> None:
    for_gone(
        lambda: dra.get_claim(kube, api, namespace, name),
        dra.claim_summary,
        what=f"ResourceClaim {namespace}/{name} to be deleted",
        timeout=timeout,
    )


def for_slice_count(
    kube: Kube, api: str, node: str, driver: str, count: int, timeout: float = timeouts.CLAIM
) -> list[dict[str, Any]]:
    def probe() -> list[dict[str, Any]] | Pending:
        items = dra.list_slices(kube, api, node=node, driver=driver)
        return (
            items if len(items) == count else Pending(f"{len(items)} slices: {[i['metadata']['name'] for i in items]}")
        )

    return until(probe, what=f"{count} ResourceSlice(s) of driver {driver} on node {node}", timeout=timeout)


def for_pod_condition(
    kube: Kube, namespace: str, name: str, type_: str, timeout: float = timeouts.CLAIM
) -> client.V1PodCondition:
    def probe() -> client.V1PodCondition | Pending:
        pod = pods.read(kube, namespace, name)
        for cond in pod.status.conditions or []:
            if cond.type == type_ and cond.status == "True":
                return cond
        return Pending(pods.summary(pod) + f" conditions={[(c.type, c.status) for c in pod.status.conditions or []]}")

    return until(probe, what=f"pod {namespace}/{name} to have condition {type_}=True", timeout=timeout)


def for_pod_unschedulable(kube: Kube, namespace: str, name: str, timeout: float = timeouts.CLAIM) -> str:
    """Wait for PodScheduled=False with reason Unschedulable; returns the scheduler's message."""

    def probe() -> str | Pending:
        pod = pods.read(kube, namespace, name)
        for cond in pod.status.conditions or []:
            if cond.type == "PodScheduled" and cond.status == "False" and cond.reason == "Unschedulable":
                return cond.message or ""
        return Pending(pods.summary(pod))

    return until(probe, what=f"pod {namespace}/{name} to be Unschedulable", timeout=timeout)


def failed_prepares(kube: Kube, namespace: str, pod: str) -> int:
    """How many times the kubelet reported a failed prepare of the pod's claims: its FailedPrepareDynamicResources
    events (pkg/kubelet/kuberuntime/kuberuntime_manager.go SyncPod, one per attempt), counts summed."""
    selector = f"involvedObject.name={pod},reason=FailedPrepareDynamicResources"
    events = kube.core.list_namespaced_event(namespace, field_selector=selector).items
    return sum(event.count or 1 for event in events)


def with_prepare_retries(
    kube: Kube, namespace: str, pod: str, probe: Callable[[], T | Pending | None], *, what: str, stall: float
) -> T:
    """Until probe yields, for as long as the kubelet keeps trying to prepare the pod's claims: each failed
    prepare (its event) gives the wait another `stall` seconds, in which the kubelet's next attempt is due
    (at the pod's next resync, timeouts.POD_RESYNC_PERIOD). A driver may fail a claim and succeed later (dra/v1
    api.proto NodePrepareResourceResponse.error), so the number of attempts is the driver's; no attempt within
    `stall` is a hang. CLAIM_POD_START_CEILING stops a driver that fails forever."""
    return until_progressing(
        probe,
        what=what,
        progress=of_values(lambda: failed_prepares(kube, namespace, pod), "failed prepares: "),
        budget=Budget(stall=stall, ceiling=timeouts.CLAIM_POD_START_CEILING),
        interval=0.2,
        max_interval=1.0,
    )


def for_claim_pod_running(
    kube: Kube, namespace: str, pod: str, stall: float = timeouts.CLAIM_POD_START
) -> client.V1Pod:
    """Running and Ready (ends early when the pod ends instead), the kubelet's prepare retries allowed for."""
    what = f"pod {namespace}/{pod} to be Running and Ready"
    return with_prepare_retries(kube, namespace, pod, running_ready(kube, namespace, pod), what=what, stall=stall)


def for_event(
    kube: Kube, namespace: str, pod: str, text: str, timeout: float = timeouts.CLAIM, *, unless: str | None = None
) -> str:
    """Wait for an event of the pod whose "<type> <reason> ...: <message>" line contains text (and not `unless`)."""

    def probe() -> str | Pending:
        lines = pods.events(kube, namespace, pod)
        hits = [line for line in lines if text in line and not (unless and unless in line)]
        return hits[0] if hits else Pending(f"events: {lines[-5:]}")

    what = f"an event of pod {namespace}/{pod} containing {text!r}" + (f" and not {unless!r}" if unless else "")
    return until(probe, what=what, timeout=timeout)


def for_rule(
    kube: Kube,
    objects: Any,
    name: str,
    condition: Callable[[dict[str, Any]], bool],
    what: str,
    timeout: float = timeouts.CLAIM,
) -> dict[str, Any]:
    """Wait for DeviceTaintRule `name` (read through objects.get_rule) to satisfy condition."""

    return for_object(
        lambda: objects.get_rule(name),
        condition,
        lambda rule: f"status={rule.get('status')}",
        what=f"DeviceTaintRule {name} {what}",
        timeout=timeout,
    )


def _kubelet_lines(node: Any, mark: int, *needles: str) -> list[str]:
    """The kubelet's log lines since log position `mark` that hold every one of `needles`."""
    return [line for line in node.kubelet.log_since(mark).splitlines() if all(n in line for n in needles)]


def for_kubelet_connection(
    node: Any, mark: int, driver: str, connected: bool = True, timeout: float = timeouts.DRA_CONNECTION
) -> str:
    """Wait for the kubelet's own log line about its gRPC connection to the driver (dra_plugin_manager,
    `Connection changed ... connected=<bool>`, logged at -v=2) after log position `mark`."""
    state = f"connected={str(connected).lower()}"

    def probe() -> str | Pending:
        lines = _kubelet_lines(node, mark, "Connection changed", f'driverName="{driver}"', state)
        return lines[-1] if lines else Pending("no such kubelet log line yet")

    return until(probe, what=f"the kubelet to log its connection to {driver} as {state}", timeout=timeout)


def for_health_stream_end(node: Any, mark: int, timeout: float = timeouts.DRA_CONNECTION) -> str:
    """Wait for the kubelet to log, after log position `mark`, that a health stream ended: its own record, written
    once the stream's handler returned (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go add(), "WatchResources
    health stream has ended" at -v=2, v1.36.5 to v1.38.0-beta.0), so whatever the handler does at the end is done."""

    def probe() -> str | Pending:
        lines = _kubelet_lines(node, mark, "health stream has ended")
        return lines[0] if lines else Pending("no such kubelet log line yet")

    return until(probe, what="the kubelet to log the end of a DRA health stream", timeout=timeout)
