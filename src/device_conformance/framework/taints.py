"""Device taints as the taint scenarios write and read them: a claim's toleration, a device's taint, a
DeviceTaintRule's effect and its EvictionInProgress condition, and a window in which a pod must not be evicted
(the eviction itself is framework/taint_eviction.py)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from device_conformance.core import timeouts
from device_conformance.framework.handles import PodHandle
from device_conformance.framework.taint_eviction import evicted
from device_conformance.kube import dra
from device_conformance.kube.client import Kube
from device_conformance.wait.core import Watch, watch


def toleration(key: str, effect: str = "NoExecute", seconds: int | None = None) -> dict[str, Any]:
    """A claim request's toleration of the taints with `key` and `effect` (operator Exists), for `seconds` when
    given (tolerationSeconds), else for good."""
    entry: dict[str, Any] = {"key": key, "operator": "Exists", "effect": effect}
    if seconds is not None:
        entry["tolerationSeconds"] = seconds
    return entry


def taint(key: str, effect: str = "NoExecute", time_added: datetime | None = None) -> dict[str, str]:
    """A device taint (dra.device_taint), with the timeAdded it says when given (whole seconds, UTC)."""
    entry = dra.device_taint(key, effect)
    if time_added is not None:
        entry["timeAdded"] = time_added.strftime("%Y-%m-%dT%H:%M:%SZ")
    return entry


def parse_time(timestamp: str) -> datetime:
    """An API timestamp ("2026-01-02T03:04:05Z") as an aware datetime."""
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))


def eviction_in_progress(rule: Mapping[str, Any]) -> dict[str, Any]:
    """The EvictionInProgress condition of a DeviceTaintRule ({} while it has none)."""
    conds = {c["type"]: c for c in (rule.get("status") or {}).get("conditions") or []}
    return conds.get("EvictionInProgress", {})


def set_rule_effect(kube: Kube, objects: Any, rule: str, effect: str) -> None:
    """A merge patch of DeviceTaintRule `rule`'s effect only (`objects`: the test's DraObjects, which know the rule
    API): timeAdded stays as the client read it, and the API server bumps it where it does (strategy.go
    PrepareForUpdate)."""
    version = objects.rule_api.split("/")[1]
    kube.custom.patch_cluster_custom_object(
        "resource.k8s.io", version, "devicetaintrules", rule, {"spec": {"taint": {"effect": effect}}}
    )


def not_evicted(pod: PodHandle, what: str) -> Watch:
    """A background window (wait.core.watch) of timeouts.TAINT_NO_EVICTION_WINDOW in which `pod` must not be
    evicted; `what` completes "<pod> ..."."""
    return watch(lambda: evicted(pod.read()), what=f"{pod} {what}", duration=timeouts.TAINT_NO_EVICTION_WINDOW)
