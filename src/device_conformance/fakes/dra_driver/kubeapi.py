"""The driver's API server calls: read ResourceClaims, publish the node's ResourceSlice, DeviceClasses.

Uses the generic CustomObjectsApi so one code path serves resource.k8s.io v1, v1beta2 and v1beta1.
`kubernetes` is imported lazily: without a kubeconfig the driver never loads it.
"""

from __future__ import annotations

import copy
from typing import Any

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from device_conformance.fakes.dra_driver.resourceslices import (
    GROUP,
    build_device_class,
    same_content,
    split_api_version,
)

REQUEST_TIMEOUT = 15


def _status(exc: BaseException) -> int | None:
    return getattr(exc, "status", None)


def _api_client(kubeconfig: str) -> Any:
    from kubernetes import config

    # persist_config=False: never write refreshed credentials back into a shared kubeconfig.
    return config.new_client_from_config(config_file=kubeconfig, persist_config=False)


class KubeApi:
    def __init__(self, kubeconfig: str, api_version: str, api_client: Any = None) -> None:
        from kubernetes import client

        self.api_client = api_client or _api_client(kubeconfig)
        self._custom = client.CustomObjectsApi(self.api_client)
        self._core = client.CoreV1Api(self.api_client)
        _, self.version = split_api_version(api_version)

    def get_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return self._custom.get_namespaced_custom_object(
            GROUP, self.version, namespace, "resourceclaims", name, _request_timeout=REQUEST_TIMEOUT
        )

    def node_uid(self, node_name: str) -> str | None:
        try:
            node = self._core.read_node(node_name, _request_timeout=REQUEST_TIMEOUT)
        except Exception as exc:
            if _status(exc) == 404:
                return None  # no owner reference rather than one to a Node that does not exist
            raise
        return node.metadata.uid

    def publish_slice(self, body: dict[str, Any], *, exact_generation: bool = False) -> dict[str, Any]:
        """Create the slice, or replace it with a bumped generation when its content differs.

        exact_generation: the slice must carry body's generation (a pool of several slices brought to one
        generation): a different generation counts as a change, and is replaced by body's, not bumped."""
        for attempt in Retrying(
            stop=stop_after_attempt(5),
            wait=wait_exponential(multiplier=0.2, max=2),
            retry=retry_if_exception(lambda e: _status(e) == 409),  # raced another writer
            reraise=True,
        ):
            with attempt:
                return self._publish_once(body, exact_generation)
        raise AssertionError("unreachable")  # Retrying either returns or re-raises

    def _publish_once(self, body: dict[str, Any], exact_generation: bool = False) -> dict[str, Any]:
        name = body["metadata"]["name"]
        try:
            existing = self._custom.get_cluster_custom_object(
                GROUP, self.version, "resourceslices", name, _request_timeout=REQUEST_TIMEOUT
            )
        except Exception as exc:
            if _status(exc) != 404:
                raise
            return self._custom.create_cluster_custom_object(
                GROUP, self.version, "resourceslices", body, _request_timeout=REQUEST_TIMEOUT
            )
        if same_content(existing, body, with_generation=exact_generation):
            return existing  # unchanged: a restart must leave the slice byte-identical
        body = copy.deepcopy(body)
        pool = body["spec"]["pool"]
        if not exact_generation:
            pool["generation"] = max(pool["generation"], existing["spec"]["pool"].get("generation", 0) + 1)
        body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
        return self._custom.replace_cluster_custom_object(
            GROUP, self.version, "resourceslices", name, body, _request_timeout=REQUEST_TIMEOUT
        )


def ensure_device_class(
    driver_name: str,
    *,
    kubeconfig: str | None = None,
    api_client: Any = None,
    name: str | None = None,
    api_version: str = "resource.k8s.io/v1",
) -> dict[str, Any]:
    """Create (or fix) a DeviceClass selecting `device.driver == "<driver_name>"`; returns the object."""
    from kubernetes import client

    if api_client is None:
        if kubeconfig is None:
            raise ValueError("ensure_device_class needs a kubeconfig or an api_client")
        api_client = _api_client(kubeconfig)
    custom = client.CustomObjectsApi(api_client)
    _, version = split_api_version(api_version)
    body = build_device_class(driver_name, api_version=api_version, name=name)
    class_name = body["metadata"]["name"]
    try:
        return custom.create_cluster_custom_object(
            GROUP, version, "deviceclasses", body, _request_timeout=REQUEST_TIMEOUT
        )
    except Exception as exc:
        if _status(exc) != 409:
            raise
    existing = custom.get_cluster_custom_object(
        GROUP, version, "deviceclasses", class_name, _request_timeout=REQUEST_TIMEOUT
    )
    if existing.get("spec", {}).get("selectors") == body["spec"]["selectors"]:
        return existing
    body["metadata"]["resourceVersion"] = existing["metadata"]["resourceVersion"]
    return custom.replace_cluster_custom_object(
        GROUP, version, "deviceclasses", class_name, body, _request_timeout=REQUEST_TIMEOUT
    )
