"""The objects of an upstream subject's manifest (`--vendor-daemonset upstream:<name>`, vendor/manifests/):
read with the image filled in, applied in dependency order (a leftover of a killed run replaced), deleted in
reverse (what is gone already is no error).

Create, replace and delete go through the client's generic machinery (kubernetes.dynamic.DynamicClient: the
resource of each object's apiVersion and kind found by discovery, as `kubectl apply` finds it); what is ours is
the `{image}` placeholder, the order and which answers are no error."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The kinds a manifest in vendor/manifests/ may hold, in the order they are applied (deleted in reverse): the
# ServiceAccount and the RBAC objects its pods run with before the DaemonSet that starts them.
MANIFEST_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "DaemonSet")


def manifest_objects(text: str, image: str) -> list[dict]:
    """The objects of a vendor/manifests/ file with `{image}` filled in, in the order MANIFEST_KINDS applies them;
    a kind it does not know is an error of the repository (ValueError)."""
    import yaml

    objects = [o for o in yaml.safe_load_all(text.replace("{image}", image)) if o]
    unknown = [o.get("kind") for o in objects if o.get("kind") not in MANIFEST_KINDS]
    if unknown:
        raise ValueError(f"vendor manifest holds kinds {unknown}; known: {list(MANIFEST_KINDS)}")
    return sorted(objects, key=lambda o: MANIFEST_KINDS.index(o["kind"]))


def apply_manifest(api_client: object, objects: list[dict]) -> list[str]:
    """Create each object (replace one left by a run killed before its teardown: ours, the name says so);
    returns "Kind namespace/name" of each, for the log."""
    from kubernetes.dynamic.exceptions import ConflictError

    done = []
    with _resources(api_client) as resources:
        for body in objects:
            resource = resources.get(api_version=body["apiVersion"], kind=body["kind"])
            name = body["metadata"]["name"]
            namespace = body["metadata"]["namespace"] if resource.namespaced else None
            try:
                resource.create(body=body, namespace=namespace)
            except ConflictError:
                resource.replace(body=body, name=name, namespace=namespace)
            done.append(f"{body['kind']} {namespace}/{name}" if namespace else f"{body['kind']} {name}")
    return done


def delete_manifest(api_client: object, objects: list[dict]) -> None:
    """Delete the objects in reverse order (the DaemonSet first, foreground: its pods with it); one already gone
    is no error."""
    from kubernetes.dynamic.exceptions import NotFoundError

    with _resources(api_client) as resources:
        for body in reversed(objects):
            resource = resources.get(api_version=body["apiVersion"], kind=body["kind"])
            namespace = body["metadata"]["namespace"] if resource.namespaced else None
            try:
                resource.delete(name=body["metadata"]["name"], namespace=namespace, propagation_policy="Foreground")
            except NotFoundError:
                pass


@contextmanager
def _resources(api_client: object) -> Iterator[Any]:
    """The dynamic client's resources of the cluster, its discovery cache in a directory of its own removed
    afterwards (by default it writes /tmp/osrcp-<hash of the server>.json and keeps it: one file per cluster).
    An API error is raised as the typed client raises it (kubernetes.client ApiException, its message), not as
    the dynamic client's subclass, whose message adds the traceback of the request."""
    from kubernetes.client.exceptions import ApiException
    from kubernetes.dynamic import DynamicClient
    from kubernetes.dynamic.exceptions import DynamicApiError

    with tempfile.TemporaryDirectory(prefix="dc-discovery-") as directory:
        try:
            yield DynamicClient(api_client, cache_file=f"{directory}/discovery.json").resources
        except DynamicApiError as exc:
            plain = ApiException(status=exc.status, reason=exc.reason)
            plain.body, plain.headers = exc.body, exc.headers
            raise plain from None
