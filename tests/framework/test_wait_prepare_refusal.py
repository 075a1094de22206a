"""ClaimPodHandle.wait_prepare_refusal: the kubelet's own refusal, not the node authorizer's transient one."""

from __future__ import annotations

import pytest

from device_conformance.core.errors import WaitTimeout
from device_conformance.framework.handles import ClaimPodHandle
from device_conformance.kube import pods

LAG = (
    "Warning FailedPrepareDynamicResources Pod/same-name: Failed to prepare dynamic resources: prepare dynamic "
    'resources: fetch ResourceClaim same-7aef50: resourceclaims.resource.k8s.io "same-7aef50" is forbidden: User '
    '"system:node:dc-r1d261e" cannot get resource "resourceclaims" in API group "resource.k8s.io" in the namespace '
    "\"dc-ad7aef50\": node: no relationship found between node 'dc-r1d261e' and this object"
)
REFUSAL = (
    "Warning FailedPrepareDynamicResources Pod/same-name: Failed to prepare dynamic resources: old ResourceClaim "
    "with same name same-7aef50 and different UID 847377f5 still exists"
)


def pod_with_events(monkeypatch, *events: str) -> ClaimPodHandle:
    monkeypatch.setattr(pods, "events", lambda kube, namespace, name: list(events))
    return ClaimPodHandle(
        kube=None, namespace="dc-ad7aef50", name="same-name", uid="u", resource_api="resource.k8s.io/v1"
    )


def test_the_authorizers_transient_refusal_is_skipped(monkeypatch):
    pod = pod_with_events(monkeypatch, "Normal Scheduled Pod/same-name: assigned", LAG, REFUSAL)
    assert pod.wait_prepare_refusal(timeout=1) == REFUSAL


def test_only_the_authorizers_refusal_is_no_refusal(monkeypatch):
    pod = pod_with_events(monkeypatch, LAG)
    awaited = (
        "an event of pod dc-ad7aef50/same-name containing 'FailedPrepareDynamicResources' "
        "and not 'no relationship found between node'"
    )
    with pytest.raises(WaitTimeout, match=awaited):
        pod.wait_prepare_refusal(timeout=0.3)
