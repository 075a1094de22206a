"""Reading what a user sees on a Node: readiness, kubelet version, capacity and allocatable."""

from __future__ import annotations

from kubernetes import client
from kubernetes.utils import parse_quantity

from device_conformance.kube.client import Kube


def ready(kube: Kube, name: str) -> bool:
    condition = ready_condition(kube, name)
    return condition is not None and condition.status == "True"


def ready_condition(kube: Kube, name: str) -> client.V1NodeCondition | None:
    """The node's Ready condition as the API shows it (None while it has none: a node not yet registered)."""
    status = kube.core.read_node(name).status
    conditions = status.conditions if status is not None else None
    return next((c for c in conditions or [] if c.type == "Ready"), None)


def conditions_summary(kube: Kube, name: str) -> str:
    node = kube.core.read_node(name)
    return ", ".join(f"{c.type}={c.status}({c.reason})" for c in node.status.conditions or [])


def kubelet_version(kube: Kube, name: str) -> str:
    return kube.core.read_node(name).status.node_info.kubelet_version


def resource_counts(kube: Kube, name: str, resource: str) -> tuple[int | None, int | None]:
    """(capacity, allocatable) of an extended resource; None where the key is absent."""
    status = kube.core.read_node(name).status

    def count(values: dict | None) -> int | None:
        if not values or resource not in values:
            return None
        return int(parse_quantity(values[resource]))

    return count(status.capacity), count(status.allocatable)
