"""The API server's audit log, as far as suites count requests in it: which controller asked for what.

The local provider starts kube-apiserver with an audit policy (providers/local/configs.audit_policy) that
records, at level Metadata and once complete, every request that AUDITED_CONTROLLERS make on pods. One JSON
event per line (--audit-log-format=json, audit.k8s.io/v1 Event)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# kube-controller-manager controllers whose pod requests the audit policy records; with
# --use-service-account-credentials each one talks as its own service account, named like the controller
# (cmd/kube-controller-manager/names/controller_names.go).
DEVICE_TAINT_EVICTION_CONTROLLER = "device-taint-eviction-controller"
AUDITED_CONTROLLERS = (DEVICE_TAINT_EVICTION_CONTROLLER,)


def controller_user(controller: str) -> str:
    """The user a kube-controller-manager controller's requests come from (its service account)."""
    return f"system:serviceaccount:kube-system:{controller}"


@dataclass(frozen=True)
class AuditedRequest:
    """One completed request: who, what verb on which object (subresource "" for the object itself), and the
    HTTP status code the API server answered."""

    user: str
    verb: str
    namespace: str
    name: str
    subresource: str
    code: int

    def short(self) -> tuple[str, str, int]:
        """(verb, subresource, code): what a per-object record compares."""
        return (self.verb, self.subresource, self.code)


def parse(text: str) -> list[AuditedRequest]:
    """The ResponseComplete events of an audit log's text, in log order (other stages and blank lines skipped;
    a last line cut short by a write in progress is skipped too)."""
    requests = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if event.get("stage") != "ResponseComplete":
            continue
        ref = event.get("objectRef") or {}
        requests.append(
            AuditedRequest(
                user=(event.get("user") or {}).get("username", ""),
                verb=event.get("verb", ""),
                namespace=ref.get("namespace", ""),
                name=ref.get("name", ""),
                subresource=ref.get("subresource", ""),
                code=int((event.get("responseStatus") or {}).get("code", 0)),
            )
        )
    return requests


def read(path: Path) -> list[AuditedRequest]:
    """The completed requests in the audit log at `path` ([] while it does not exist yet)."""
    try:
        return parse(path.read_text())
    except FileNotFoundError:
        return []


def by_object(requests: list[AuditedRequest], user: str, namespace: str) -> dict[str, list[tuple[str, str, int]]]:
    """`user`'s requests on the objects of `namespace`, per object name, each as AuditedRequest.short()."""
    result: dict[str, list[tuple[str, str, int]]] = {}
    for request in requests:
        if request.user == user and request.namespace == namespace:
            result.setdefault(request.name, []).append(request.short())
    return result
