"""resource.k8s.io objects the suites create and read: claims, claim templates, slices, DeviceTaintRules.

Everything goes through CustomObjectsApi as plain dicts, so one code path serves every API version;
which version a cluster serves is data in expectations/dra.py.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client

from device_conformance.kube.client import Kube

GROUP = "resource.k8s.io"


def _version(api_version: str) -> str:
    return api_version.split("/", 1)[1]


def device_request(
    device_class: str,
    *,
    name: str = "dev",
    count: int = 1,
    selectors: Sequence[str] = (),
    tolerations: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """One DeviceRequest in the v1 shape (`exactly`), v1beta2 has the same shape."""
    exactly: dict[str, Any] = {"deviceClassName": device_class, "count": count}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if tolerations:
        exactly["tolerations"] = [dict(t) for t in tolerations]
    return {"name": name, "exactly": exactly}


def claim_spec(requests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {"devices": {"requests": [dict(r) for r in requests]}}


def claim_manifest(name: str, spec: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": "ResourceClaim", "metadata": {"name": name}, "spec": dict(spec)}


def claim_template_manifest(name: str, spec: Mapping[str, Any], api_version: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name},
        "spec": {"spec": dict(spec)},
    }


def with_claims(
    pod: Mapping[str, Any], *, claims: Mapping[str, str] = {}, templates: Mapping[str, str] = {}
) -> dict[str, Any]:
    """A copy of a pod manifest whose containers use the given claims.

    claims: pod-level name -> ResourceClaim name; templates: pod-level name -> ResourceClaimTemplate name.
    """
    manifest = copy.deepcopy(dict(pod))
    spec = manifest["spec"]
    entries = [{"name": n, "resourceClaimName": c} for n, c in claims.items()]
    entries += [{"name": n, "resourceClaimTemplateName": t} for n, t in templates.items()]
    spec["resourceClaims"] = entries
    for container in spec["containers"]:
        container.setdefault("resources", {})["claims"] = [{"name": e["name"]} for e in entries]
    return manifest


# resource.k8s.io versions whose DeviceRequest has the exact request's fields inline (deviceClassName, selectors,
# count, allocationMode, adminAccess, tolerations): k8s.io/api v0.33.13 resource/v1beta1/types.go DeviceRequest.
# v1beta2 and v1 moved them under `exactly` (ExactDeviceRequest, KEP-4816), the shape device_request() builds.
_INLINE_REQUEST_VERSIONS = {"v1alpha3", "v1beta1"}


def in_api_version(body: Mapping[str, Any]) -> dict[str, Any]:
    """A ResourceClaim or ResourceClaimTemplate built in the v1 shape, as its own apiVersion spells it: for
    v1alpha3/v1beta1 (1.32, 1.33) each request's `exactly` fields go inline; other objects are unchanged."""
    converted = copy.deepcopy(dict(body))
    if _version(converted["apiVersion"]) not in _INLINE_REQUEST_VERSIONS:
        return converted
    spec = converted.get("spec") or {}
    if converted.get("kind") == "ResourceClaimTemplate":
        spec = spec.get("spec") or {}
    for request in (spec.get("devices") or {}).get("requests") or []:
        request.update(request.pop("exactly", {}))
    return converted


def create(kube: Kube, namespace: str, plural: str, body: Mapping[str, Any]) -> dict[str, Any]:
    body = in_api_version(body)
    return kube.custom.create_namespaced_custom_object(GROUP, _version(body["apiVersion"]), namespace, plural, body)


def get_claim(kube: Kube, api_version: str, namespace: str, name: str) -> dict[str, Any]:
    return kube.custom.get_namespaced_custom_object(GROUP, _version(api_version), namespace, "resourceclaims", name)


def list_claims(kube: Kube, api_version: str, namespace: str) -> list[dict[str, Any]]:
    reply = kube.custom.list_namespaced_custom_object(GROUP, _version(api_version), namespace, "resourceclaims")
    return reply["items"]


def delete_claim(kube: Kube, api_version: str, namespace: str, name: str) -> None:
    kube.custom.delete_namespaced_custom_object(GROUP, _version(api_version), namespace, "resourceclaims", name)


def claim_summary(claim: Mapping[str, Any]) -> str:
    status = claim.get("status") or {}
    results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
    reserved = [f"{r.get('name')}({str(r.get('uid'))[:8]})" for r in status.get("reservedFor") or []]
    devices = [r.get("device") for r in results]
    deleting = " deleting" if (claim.get("metadata") or {}).get("deletionTimestamp") else ""
    return f"{claim['metadata']['name']}: allocated={devices} reservedFor={reserved}{deleting}"


def list_slices(kube: Kube, api_version: str, *, node: str | None = None, driver: str | None = None) -> list[dict]:
    selectors = [f"spec.nodeName={node}"] if node else []
    selectors += [f"spec.driver={driver}"] if driver else []
    reply = kube.custom.list_cluster_custom_object(
        GROUP, _version(api_version), "resourceslices", field_selector=",".join(selectors) or None
    )
    return reply["items"]


def delete_slices(kube: Kube, api_version: str, *, driver: str) -> None:
    for item in list_slices(kube, api_version, driver=driver):
        _delete_cluster_object(kube, api_version, "resourceslices", item["metadata"]["name"])


def create_device_class(kube: Kube, body: dict[str, Any]) -> None:
    """Create a DeviceClass in the API version its body names."""
    kube.custom.create_cluster_custom_object(GROUP, _version(body["apiVersion"]), "deviceclasses", body)


def delete_device_class(kube: Kube, api_version: str, name: str) -> None:
    _delete_cluster_object(kube, api_version, "deviceclasses", name)


def device_taint(key: str, effect: str, value: str = "") -> dict[str, str]:
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


def device_taint_rule_manifest(
    name: str,
    taint: Mapping[str, str],
    api_version: str,
    *,
    driver: str | None,
    pool: str | None = None,
    device: str | None = None,
) -> dict[str, Any]:
    """A DeviceTaintRule selecting by driver (and pool/device): the 1.35+ DeviceTaintSelector fields. driver None:
    a rule without deviceSelector, which matches no device (k8s.io/api resource/v1 DeviceTaintRuleSpec)."""
    spec: dict[str, Any] = {"taint": dict(taint)}
    if driver is not None:
        selector = {"driver": driver}
        if pool:
            selector["pool"] = pool
        if device:
            selector["device"] = device
        spec["deviceSelector"] = selector
    return {"apiVersion": api_version, "kind": "DeviceTaintRule", "metadata": {"name": name}, "spec": spec}


def create_device_taint_rule(kube: Kube, body: Mapping[str, Any]) -> dict[str, Any]:
    return kube.custom.create_cluster_custom_object(GROUP, _version(body["apiVersion"]), "devicetaintrules", body)


def get_device_taint_rule(kube: Kube, api_version: str, name: str) -> dict[str, Any]:
    return kube.custom.get_cluster_custom_object(GROUP, _version(api_version), "devicetaintrules", name)


def delete_device_taint_rule(kube: Kube, api_version: str, name: str) -> None:
    _delete_cluster_object(kube, api_version, "devicetaintrules", name)


def _delete_cluster_object(kube: Kube, api_version: str, plural: str, name: str) -> None:
    try:
        kube.custom.delete_cluster_custom_object(GROUP, _version(api_version), plural, name)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
