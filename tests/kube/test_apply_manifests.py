"""Applying and deleting an upstream subject's manifest (kube/manifests.py) through the client's dynamic machinery,
against a fake API server at the ApiClient.call_api level: discovery, then create / replace / delete by path, in
order, with a leftover (409) replaced, what is gone (404) no error, and any other error raised as the typed client
raises it (no cluster)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from device_conformance.fixtures.vendor import MANIFESTS
from kubernetes.client.exceptions import ApiException

from device_conformance.kube.manifests import MANIFEST_KINDS, apply_manifest, delete_manifest, manifest_objects

# What discovery answers: the group versions of the manifests' kinds, each resource with its plural and scope.
DISCOVERY = {
    "/version": {"major": "1", "minor": "37", "gitVersion": "v1.37.1"},
    "/apis": {
        "kind": "APIGroupList",
        "groups": [
            {
                "name": group,
                "versions": [{"groupVersion": f"{group}/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": f"{group}/v1", "version": "v1"},
            }
            for group in ("rbac.authorization.k8s.io", "apps")
        ],
    },
    "/api/v1": {
        "kind": "APIResourceList",
        "resources": [{"name": "serviceaccounts", "kind": "ServiceAccount", "namespaced": True}],
    },
    "/apis/rbac.authorization.k8s.io/v1": {
        "kind": "APIResourceList",
        "resources": [
            {"name": "clusterroles", "kind": "ClusterRole", "namespaced": False},
            {"name": "clusterrolebindings", "kind": "ClusterRoleBinding", "namespaced": False},
        ],
    },
    "/apis/apps/v1": {
        "kind": "APIResourceList",
        "resources": [{"name": "daemonsets", "kind": "DaemonSet", "namespaced": True}],
    },
}


class FakeApiServer:
    """An ApiClient as the dynamic client uses it: discovery answered from DISCOVERY, every other request
    recorded as (METHOD, path, query); a POST whose name is in `existing` answers 409, a DELETE of one in `gone`
    404, and any request whose path ends with a name in `refused` 403."""

    def __init__(self, existing=(), gone=(), refused=()):
        self.configuration = SimpleNamespace(host="https://fake:6443")
        self.existing, self.gone, self.refused = set(existing), set(gone), set(refused)
        self.log: list[tuple] = []

    def select_header_accept(self, accepts):
        return "application/json"

    def select_header_content_type(self, content_types):
        return "application/json"

    def call_api(self, path, method, path_params, query_params, header_params, body=None, **_):
        if method == "GET":
            return SimpleNamespace(data=json.dumps(DISCOVERY[path]).encode())
        self.log.append((method, path, *(f"{k}={v}" for k, v in query_params)))
        name = body["metadata"]["name"] if method == "POST" else path.rsplit("/", 1)[1]
        if name in self.refused:
            raise ApiException(status=403, reason="Forbidden")
        if method == "POST" and name in self.existing:
            raise ApiException(status=409, reason="Conflict")
        if method == "DELETE" and name in self.gone:
            raise ApiException(status=404, reason="Not Found")
        answer = body if method != "DELETE" else {"apiVersion": "v1", "kind": "Status", "status": "Success"}
        return SimpleNamespace(data=json.dumps(answer).encode())


def _objects():
    return manifest_objects((MANIFESTS / "dra-test-driver.yaml").read_text(), "img")


def test_the_objects_come_in_apply_order_with_the_image_filled_in():
    objects = manifest_objects((MANIFESTS / "dra-test-driver.yaml").read_text(), "dc.local/test-driver:v1")
    assert [o["kind"] for o in objects] == list(MANIFEST_KINDS)
    assert objects[-1]["spec"]["template"]["spec"]["containers"][0]["image"] == "dc.local/test-driver:v1"
    written_backwards = "\n---\n".join(f"kind: {kind}\nmetadata: {{name: x}}" for kind in reversed(MANIFEST_KINDS))
    assert [o["kind"] for o in manifest_objects(written_backwards, "img")] == list(MANIFEST_KINDS)
    with pytest.raises(ValueError, match=r"vendor manifest holds kinds \['Deployment'\]; known: \['ServiceAccount'"):
        manifest_objects("kind: Deployment\nmetadata: {name: x}\n", "img")


def test_a_manifest_is_applied_in_order_and_deleted_in_reverse():
    server = FakeApiServer()
    assert apply_manifest(server, _objects()) == [
        "ServiceAccount kube-system/dc-dra-test-driver",
        "ClusterRole dc-dra-test-driver",
        "ClusterRoleBinding dc-dra-test-driver",
        "DaemonSet kube-system/dc-dra-test-driver",
    ]
    assert server.log == [
        ("POST", "/api/v1/namespaces/kube-system/serviceaccounts"),
        ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles"),
        ("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
        ("POST", "/apis/apps/v1/namespaces/kube-system/daemonsets"),
    ]
    server.log.clear()
    delete_manifest(server, _objects())
    assert [(method, path) for method, path, _ in server.log] == [
        ("DELETE", "/apis/apps/v1/namespaces/kube-system/daemonsets/dc-dra-test-driver"),
        ("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/dc-dra-test-driver"),
        ("DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/dc-dra-test-driver"),
        ("DELETE", "/api/v1/namespaces/kube-system/serviceaccounts/dc-dra-test-driver"),
    ]
    assert {query for *_, query in server.log} == {"propagationPolicy=Foreground"}


def test_a_leftover_is_replaced_and_what_is_gone_is_no_error():
    server = FakeApiServer(existing={"dc-dra-test-driver"})
    apply_manifest(server, _objects())  # every object left by a killed run: each create answers 409 and is replaced
    assert [(method, path.rsplit("/", 1)[-1]) for method, path, *_ in server.log] == [
        ("POST", "serviceaccounts"),
        ("PUT", "dc-dra-test-driver"),
        ("POST", "clusterroles"),
        ("PUT", "dc-dra-test-driver"),
        ("POST", "clusterrolebindings"),
        ("PUT", "dc-dra-test-driver"),
        ("POST", "daemonsets"),
        ("PUT", "dc-dra-test-driver"),
    ]
    assert server.log[1][1] == "/api/v1/namespaces/kube-system/serviceaccounts/dc-dra-test-driver"
    server = FakeApiServer(gone={"dc-dra-test-driver"})
    delete_manifest(server, _objects())  # all already gone
    assert len(server.log) == 4


def test_an_api_error_other_than_conflict_or_not_found_is_raised_as_the_typed_client_raises_it():
    account = _objects()[:1]
    for call in (apply_manifest, delete_manifest):
        with pytest.raises(ApiException) as raised:
            call(FakeApiServer(refused={"dc-dra-test-driver", "serviceaccounts"}), account)
        assert type(raised.value) is ApiException  # not the dynamic client's ForbiddenError
        assert str(raised.value).startswith("(403)\nReason: Forbidden\n")


def test_discovery_leaves_no_cache_file_behind(monkeypatch, tmp_path):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    apply_manifest(FakeApiServer(), _objects())
    delete_manifest(FakeApiServer(), _objects())
    assert list(Path(tmp_path).iterdir()) == []
