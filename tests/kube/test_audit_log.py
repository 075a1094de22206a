"""kube/audit.py: the API server's audit log read as the requests a suite counts."""

import json

from device_conformance.kube import audit

USER = audit.controller_user(audit.DEVICE_TAINT_EVICTION_CONTROLLER)


def event(stage, verb, name, subresource=None, code=200, user=USER, namespace="ns"):
    ref = {"resource": "pods", "namespace": namespace, "name": name, "apiVersion": "v1"}
    if subresource:
        ref["subresource"] = subresource
    return json.dumps(
        {
            "kind": "Event",
            "apiVersion": "audit.k8s.io/v1",
            "level": "Metadata",
            "stage": stage,
            "verb": verb,
            "user": {"username": user},
            "objectRef": ref,
            "responseStatus": {"code": code},
        }
    )


def test_only_completed_requests_count_and_a_torn_last_line_is_skipped():
    text = "\n".join(
        [
            event("ResponseComplete", "get", "a"),
            event("ResponseStarted", "watch", "a"),
            "",
            event("ResponseComplete", "patch", "a", "status"),
            event("ResponseComplete", "delete", "a", code=409),
            event("ResponseComplete", "get", "b", user="system:kube-scheduler"),
            event("ResponseComplete", "get", "c", namespace="other"),
            event("ResponseComplete", "delete", "b")[:40],
        ]
    )
    requests = audit.parse(text)
    assert [r.short() for r in requests] == [
        ("get", "", 200),
        ("patch", "status", 200),
        ("delete", "", 409),
        ("get", "", 200),
        ("get", "", 200),
    ]
    assert audit.by_object(requests, USER, "ns") == {
        "a": [("get", "", 200), ("patch", "status", 200), ("delete", "", 409)]
    }


def test_a_log_not_written_yet_has_no_request(tmp_path):
    assert audit.read(tmp_path / "absent.log") == []
    log = tmp_path / "audit.log"
    log.write_text(event("ResponseComplete", "get", "a") + "\n")
    assert audit.by_object(audit.read(log), USER, "ns") == {"a": [("get", "", 200)]}
