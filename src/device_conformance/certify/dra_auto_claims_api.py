"""The API access of `--claims auto` (certify/dra_auto_claims.py): the calls it makes (ClusterApi) and KubeApi, those
calls over the kubernetes client, every resource.k8s.io object through CustomObjectsApi as a plain dict so that
each served version (v1, v1beta2, v1beta1) goes one way, as kube/dra.py does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from device_conformance.core.errors import BadInput
from device_conformance.kube import dra

FIX_KUBECONFIG = "give --kubeconfig FILE of the cluster the driver publishes to, and --node NODE it runs for"


class ClusterApi(Protocol):
    """The API calls --claims auto makes (KubeApi below; an in-memory fake in tests/certify)."""

    def resource_versions(self) -> list[str]: ...
    def node_labels(self, name: str) -> dict[str, str] | None: ...
    def node_names(self) -> list[str]: ...
    def list_slices(self, version: str, driver: str) -> list[dict[str, Any]]: ...
    def list_claims(self, version: str) -> list[dict[str, Any]]: ...
    def create_namespace(self, body: dict[str, Any]) -> None: ...
    def delete_namespace(self, name: str) -> None: ...
    def namespace_exists(self, name: str) -> bool: ...
    def create_device_class(self, version: str, body: dict[str, Any]) -> None: ...
    def delete_device_class(self, version: str, name: str) -> None: ...
    def create_claim(self, version: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...
    def get_claim(self, version: str, namespace: str, name: str) -> dict[str, Any] | None: ...
    def replace_claim_status(self, version: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...
    def delete_claim(self, version: str, namespace: str, name: str) -> None: ...
    def create_pod(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]: ...
    def delete_pod(self, namespace: str, name: str) -> None: ...


def api_error(exc: Exception) -> str:
    """HTTP status and reason, with the API server's own message when it sent one (an admission's refusal)."""
    status, reason = getattr(exc, "status", None), getattr(exc, "reason", None)
    if not status:
        return f"{type(exc).__name__}: {exc}"
    try:
        message = json.loads(getattr(exc, "body", None) or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return f"HTTP {status} {reason}" + (f": {message}" if message else "")


class KubeApi:
    """ClusterApi over the kubernetes client (resource.k8s.io objects through CustomObjectsApi as plain dicts,
    so every version goes one way, as kube/dra.py does)."""

    def __init__(self, kubeconfig: str) -> None:
        from kubernetes import client, config

        try:
            api_client = config.new_client_from_config(config_file=kubeconfig)
        except Exception as exc:
            raise BadInput(f"--kubeconfig {kubeconfig}: {type(exc).__name__}: {exc}", FIX_KUBECONFIG) from exc
        self.api_client = api_client
        self.core = client.CoreV1Api(api_client)
        self.custom = client.CustomObjectsApi(api_client)
        self.apis = client.ApisApi(api_client)

    def close(self) -> None:
        self.api_client.close()

    def resource_versions(self) -> list[str]:
        groups = self.apis.get_api_versions(_request_timeout=30).groups or []
        return [v.version for g in groups if g.name == dra.GROUP for v in g.versions or []]

    def node_labels(self, name: str) -> dict[str, str] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            node = self.core.read_node(name, _request_timeout=30)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return dict(node.metadata.labels or {})

    def node_names(self) -> list[str]:
        return [n.metadata.name for n in self.core.list_node(_request_timeout=30).items]

    def list_slices(self, version: str, driver: str) -> list[dict[str, Any]]:
        # Every slice of the driver, not only those with spec.nodeName: a slice may serve the node through
        # allNodes, a nodeSelector or per-device node selection (resource/v1 types.go ResourceSliceSpec).
        reply = self.custom.list_cluster_custom_object(
            dra.GROUP, version, "resourceslices", field_selector=f"spec.driver={driver}", _request_timeout=30
        )
        return list(reply.get("items") or [])

    def list_claims(self, version: str) -> list[dict[str, Any]]:
        reply = self.custom.list_cluster_custom_object(dra.GROUP, version, "resourceclaims", _request_timeout=30)
        return list(reply.get("items") or [])

    def create_namespace(self, body: dict[str, Any]) -> None:
        self.core.create_namespace(body, _request_timeout=30)

    def delete_namespace(self, name: str) -> None:
        self.core.delete_namespace(name, _request_timeout=30)

    def namespace_exists(self, name: str) -> bool:
        return _exists(lambda: self.core.read_namespace(name, _request_timeout=30))

    def create_device_class(self, version: str, body: dict[str, Any]) -> None:
        self.custom.create_cluster_custom_object(dra.GROUP, version, "deviceclasses", body, _request_timeout=30)

    def delete_device_class(self, version: str, name: str) -> None:
        self.custom.delete_cluster_custom_object(dra.GROUP, version, "deviceclasses", name, _request_timeout=30)

    def create_claim(self, version: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(
            self.custom.create_namespaced_custom_object(
                dra.GROUP, version, namespace, "resourceclaims", body, _request_timeout=30
            )
        )

    def get_claim(self, version: str, namespace: str, name: str) -> dict[str, Any] | None:
        from kubernetes.client.exceptions import ApiException

        try:
            return dict(
                self.custom.get_namespaced_custom_object(
                    dra.GROUP, version, namespace, "resourceclaims", name, _request_timeout=30
                )
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def replace_claim_status(self, version: str, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        name = body["metadata"]["name"]
        return dict(
            self.custom.replace_namespaced_custom_object_status(
                dra.GROUP, version, namespace, "resourceclaims", name, body, _request_timeout=30
            )
        )

    def delete_claim(self, version: str, namespace: str, name: str) -> None:
        self.custom.delete_namespaced_custom_object(
            dra.GROUP, version, namespace, "resourceclaims", name, _request_timeout=30
        )

    def create_pod(self, namespace: str, body: dict[str, Any]) -> dict[str, Any]:
        pod = self.core.create_namespaced_pod(namespace, body, _request_timeout=30)
        return {"metadata": {"name": pod.metadata.name, "uid": pod.metadata.uid}}

    def delete_pod(self, namespace: str, name: str) -> None:
        self.core.delete_namespaced_pod(name, namespace, grace_period_seconds=0, _request_timeout=30)


def _exists(read: Callable[[], object]) -> bool:
    """Whether the object `read` reads exists: False on 404, any other API error raised."""
    from kubernetes.client.exceptions import ApiException

    try:
        read()
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True
