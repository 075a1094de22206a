"""DRA and device-taint facts per Kubernetes version, as data. Every entry names its upstream source."""

from __future__ import annotations

from device_conformance import timeouts
from device_conformance.expectations.behaviour import KnownBug
from device_conformance.expectations.versions import KubeVersion


def resource_api_version(version: KubeVersion) -> str:
    """The resource.k8s.io version for claims, slices and classes: v1 is GA and served from 1.34 (KEP-4381);
    1.32-1.33 need v1beta1 (enabled by expectations/cluster.py)."""
    return "resource.k8s.io/v1" if version.at_least(34) else "resource.k8s.io/v1beta1"


def device_taint_rule_api_version(version: KubeVersion) -> str:
    """DeviceTaintRule: v1alpha3 in 1.33-1.35, v1beta2 in 1.36, v1 (GA, DRADeviceTaintRules on) in 1.37
    (k8s.io/api v0.37.1 resource/v1/types.go; kube_features.go v1.37.1)."""
    if version.at_least(37):
        return "resource.k8s.io/v1"
    if version.at_least(36):
        return "resource.k8s.io/v1beta2"
    return "resource.k8s.io/v1alpha3"


def has_none_taint_effect(version: KubeVersion) -> bool:
    """Effect `None` and DeviceTaintRule status conditions came with 1.35 (kubernetes#134152)."""
    return version.at_least(35)


# devicetainteviction handlePods returned (instead of continuing) on a stale status.reservedFor entry (pod gone,
# or UID mismatch), so later consumers of a shared claim were not evicted. Fix proposed in
# kubernetes/kubernetes#135686 (closed unmerged). Read in the module sources (pkg/controller/devicetainteviction/
# device_taint_eviction.go, handlePods): v1.35.0 has `return`; v1.36.0, v1.36.4, v1.36.5 and v1.37.1 have
# `continue` (the loop became a switch when PodGroup consumers were added). 1.35 patch releases after .0 and
# 1.33/1.34 were not read: they count as affected.
SHARED_CLAIM_STALE_CONSUMER_EVICTION = KnownBug(
    issue="kubernetes#135686",
    title="device taint eviction skips later consumers of a shared claim after a stale reservedFor entry",
    since_minor=33,  # the device-taint eviction controller came with DRADeviceTaints (alpha, 1.33)
    fixed_in=KubeVersion(1, 36, 0),
    fix="handlePods continuing past stale entries (1.36.0 source)",
)


# Kept for the suites not yet moved to device_conformance.timeouts (which explains the value).
CLAIM_POD_START_TIMEOUT = timeouts.CLAIM_POD_START
