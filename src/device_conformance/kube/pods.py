"""Pods: builders for the suites' workloads and reads of what a user sees."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

from kubernetes import client

from device_conformance.kube.client import Kube
from device_conformance.toolchain.images.build import WORKLOAD_IMAGE

RUN_LABEL = "device-conformance/run"


def container_spec(
    name: str,
    command: list[str],
    *,
    resources: Mapping[str, int] | None = None,
    restart_policy: str | None = None,
    volume_mounts: Sequence[dict] = (),
) -> dict:
    """A busybox container (our locally built image; nothing can be pulled here). An init container
    with restart_policy="Always" is a sidecar. volume_mounts: Kubernetes volumeMount dicts."""
    container: dict = {"name": name, "image": WORKLOAD_IMAGE, "imagePullPolicy": "Never", "command": command}
    if volume_mounts:
        container["volumeMounts"] = list(volume_mounts)
    if resources:
        limits = {key: str(value) for key, value in resources.items()}
        container["resources"] = {"limits": limits, "requests": limits}
    if restart_policy:
        container["restartPolicy"] = restart_policy
    return container


def pod_manifest(
    name: str,
    command: list[str],
    *,
    restart_policy: str = "Never",
    resources: Mapping[str, int] | None = None,
    node_name: str | None = None,
    labels: Mapping[str, str] | None = None,
    init_containers: Sequence[dict] = (),
    containers: Sequence[dict] = (),
    finalizers: Sequence[str] = (),
    volumes: Sequence[dict] = (),
    tolerations: Sequence[Mapping[str, str]] = (),
    affinity: Mapping[str, object] | None = None,
) -> dict:
    """A pod whose container "main" runs `command`; init_containers and containers (further app
    containers, after main) are container_spec() dicts; volumes are Kubernetes volume dicts (for the
    volume_mounts of those containers). tolerations and affinity go into the spec as given (for the
    scheduler: fixtures/nodes.py makes both for tests that place pods on chosen nodes)."""
    spec: dict = {
        "restartPolicy": restart_policy,
        "dnsPolicy": "Default",  # no cluster DNS in these clusters
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 1,
        "containers": [container_spec("main", command, resources=resources), *containers],
    }
    if init_containers:
        spec["initContainers"] = list(init_containers)
    if volumes:
        spec["volumes"] = list(volumes)
    if node_name:
        spec["nodeName"] = node_name
    if tolerations:
        spec["tolerations"] = [dict(t) for t in tolerations]
    if affinity:
        spec["affinity"] = dict(affinity)
    metadata: dict = {"name": name, "labels": {RUN_LABEL: "true", **(labels or {})}}
    if finalizers:
        metadata["finalizers"] = list(finalizers)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def unique_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def create(kube: Kube, namespace: str, manifest: dict) -> client.V1Pod:
    return kube.core.create_namespaced_pod(namespace, manifest)


def read(kube: Kube, namespace: str, name: str) -> client.V1Pod:
    return kube.core.read_namespaced_pod(name, namespace)


def remove_finalizers(kube: Kube, namespace: str, name: str) -> None:
    """Let a pod kept by a finalizer go (a no-op when it is already gone)."""
    try:
        kube.core.patch_namespaced_pod(name, namespace, {"metadata": {"finalizers": None}})
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def force_delete(kube: Kube, namespace: str, name: str) -> None:
    """Delete with grace 0: the API object goes at once, whatever the kubelet is doing."""
    kube.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0)


def is_ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def summary(pod: client.V1Pod) -> str:
    status = pod.status
    parts = [f"phase={status.phase}"]
    if status.reason:
        parts.append(f"reason={status.reason}")
    if status.message:
        parts.append(f"message={status.message!r}")
    for cs in status.container_statuses or []:
        state = cs.state
        if state.waiting:
            parts.append(f"{cs.name}: waiting {state.waiting.reason}")
        elif state.terminated:
            parts.append(f"{cs.name}: terminated {state.terminated.reason} exit={state.terminated.exit_code}")
        elif state.running:
            parts.append(f"{cs.name}: running restarts={cs.restart_count}")
    return " ".join(parts)


def logs(kube: Kube, namespace: str, name: str, container: str = "main") -> str:
    # Raw bytes: the generated client (36.x) returns str(bytes) for this text/plain endpoint.
    reply = kube.core.read_namespaced_pod_log(name, namespace, container=container, _preload_content=False)
    return reply.data.decode()


def events(kube: Kube, namespace: str, name: str | None = None) -> list[str]:
    selector = f"involvedObject.name={name}" if name else None
    items = kube.core.list_namespaced_event(namespace, field_selector=selector).items
    items.sort(key=lambda e: e.last_timestamp or e.event_time or e.metadata.creation_timestamp)
    return [f"{e.type} {e.reason} {e.involved_object.kind}/{e.involved_object.name}: {e.message}" for e in items]
