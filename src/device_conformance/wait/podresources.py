"""Waits on the kubelet's podresources API (what the node says each pod's containers hold)."""

from __future__ import annotations

from device_conformance.core import timeouts
from device_conformance.kube import podresources
from device_conformance.kube.podresources import PodResources
from device_conformance.wait.core import Pending, until, until_holds


def for_listed_pod(
    socket: str, namespace: str, name: str, timeout: float = timeouts.PODRESOURCES_LISTED
) -> PodResources:
    """The pod's entry; right after a kubelet restart a running pod is listed only once it is synced again."""

    def probe() -> PodResources | Pending:
        entry = podresources.find_pod(podresources.list_pod_resources(socket), name, namespace)
        return entry if entry is not None else Pending(f"podresources does not list {namespace}/{name}")

    return until(probe, what=f"podresources to list {namespace}/{name}", timeout=timeout)


def for_unlisted_pod(socket: str, namespace: str, name: str, timeout: float = timeouts.PODRESOURCES_LISTED) -> None:
    def unlisted() -> str | None:
        entry = podresources.find_pod(podresources.list_pod_resources(socket), name, namespace)
        return None if entry is None else f"still listed: {[(c.name, c.device_ids) for c in entry.containers]}"

    until_holds(unlisted, what=f"podresources to stop listing {namespace}/{name}", timeout=timeout)


def device_ids(socket: str, namespace: str, name: str, resource: str, container: str = "main") -> list[str]:
    """The device IDs of `resource` podresources reports for one container (waits for the pod to be listed)."""
    entry = for_listed_pod(socket, namespace, name)
    return entry.container(container).device_ids.get(resource, [])
