"""The objects of an upstream subject's manifest (`--vendor-daemonset upstream:<name>`, vendor/manifests/):
read with the image filled in, applied in dependency order (a leftover of a killed run replaced), deleted in
reverse (what is gone already is no error)."""

from __future__ import annotations

from collections.abc import Callable

# The kinds a manifest in vendor/manifests/ may hold, in the order they are applied (deleted in reverse):
# kind -> (API attribute of Kube's client, create / replace / delete method stem, namespaced).
MANIFEST_KINDS: dict[str, tuple[str, str, bool]] = {
    "ServiceAccount": ("CoreV1Api", "service_account", True),
    "ClusterRole": ("RbacAuthorizationV1Api", "cluster_role", False),
    "ClusterRoleBinding": ("RbacAuthorizationV1Api", "cluster_role_binding", False),
    "DaemonSet": ("AppsV1Api", "daemon_set", True),
}


def manifest_objects(text: str, image: str) -> list[dict]:
    """The objects of a vendor/manifests/ file with `{image}` filled in, in the order MANIFEST_KINDS applies them;
    a kind it does not know is an error of the repository (ValueError)."""
    import yaml

    objects = [o for o in yaml.safe_load_all(text.replace("{image}", image)) if o]
    unknown = [o.get("kind") for o in objects if o.get("kind") not in MANIFEST_KINDS]
    if unknown:
        raise ValueError(f"vendor manifest holds kinds {unknown}; known: {list(MANIFEST_KINDS)}")
    order = list(MANIFEST_KINDS)
    return sorted(objects, key=lambda o: order.index(o["kind"]))


def _manifest_call(api_client: object, body: dict, verb: str) -> tuple[Callable, list[str]]:
    from kubernetes import client

    api_name, stem, namespaced = MANIFEST_KINDS[body["kind"]]
    api = getattr(client, api_name)(api_client)
    metadata = body["metadata"]
    if namespaced:
        return getattr(api, f"{verb}_namespaced_{stem}"), [metadata["namespace"]]
    return getattr(api, f"{verb}_{stem}"), []


def apply_manifest(api_client: object, objects: list[dict]) -> list[str]:
    """Create each object (replace one left by a run killed before its teardown: ours, the name says so);
    returns "Kind namespace/name" of each, for the log."""
    from kubernetes.client.exceptions import ApiException

    done = []
    for body in objects:
        create, where = _manifest_call(api_client, body, "create")
        try:
            create(*where, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            replace, where = _manifest_call(api_client, body, "replace")
            replace(body["metadata"]["name"], *where, body)
        done.append(f"{body['kind']} {'/'.join([*where, body['metadata']['name']])}")
    return done


def delete_manifest(api_client: object, objects: list[dict]) -> None:
    """Delete the objects in reverse order (the DaemonSet first, foreground: its pods with it); one already gone
    is no error."""
    from kubernetes.client.exceptions import ApiException

    for body in reversed(objects):
        delete, where = _manifest_call(api_client, body, "delete")
        try:
            delete(body["metadata"]["name"], *where, propagation_policy="Foreground")
        except ApiException as exc:
            if exc.status != 404:
                raise
