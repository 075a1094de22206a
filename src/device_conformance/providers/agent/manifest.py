"""The node agent's objects as plain data: a Namespace of its own per session (Pod Security "privileged",
deleted at the end with everything in it), a Secret (TLS key pair and token), and one Pod per node the
user named, bound to it by spec.nodeName (never scheduled anywhere else, no DaemonSet that would land on
every node)."""

from __future__ import annotations

import re
from typing import Any

from device_conformance.core.errors import BadInput

LABEL = "device-conformance.io/node-agent"
SESSION_LABEL = "device-conformance.io/session"
SECRET = "dc-node-agent"
SECRETS_DIR = "/etc/dc-node-agent"
# The node's kubelet healthz and the runtime's sockets are reached from the node's network namespace and
# root; PATH covers the node's sbin directories for systemctl, journalctl and kill after nsenter.
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# DNS-1123 label: a node name becomes part of a pod name.
_LABEL_UNSAFE = re.compile(r"[^a-z0-9-]+")


def namespace_name(session: str) -> str:
    return f"dc-node-agent-{session}"


def pod_name(node: str) -> str:
    """`dc-node-agent-<node>`, cut to a DNS-1123 label (63) with the node's tail kept distinct."""
    safe = _LABEL_UNSAFE.sub("-", node.lower()).strip("-")
    name = f"dc-node-agent-{safe}"
    if len(name) > 63:
        import hashlib

        name = f"{name[:52]}-{hashlib.sha256(node.encode()).hexdigest()[:10]}"
    return name


def namespace(session: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": namespace_name(session),
            "labels": {
                LABEL: "true",
                SESSION_LABEL: session,
                # The agent is privileged with host namespaces: the namespace's Pod Security level must allow it.
                "pod-security.kubernetes.io/enforce": "privileged",
                "pod-security.kubernetes.io/audit": "privileged",
                "pod-security.kubernetes.io/warn": "privileged",
            },
        },
    }


def secret(session: str, cert_pem: bytes, key_pem: bytes, token: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": SECRET, "namespace": namespace_name(session), "labels": {LABEL: "true"}},
        "type": "Opaque",
        "stringData": {"tls.crt": cert_pem.decode(), "tls.key": key_pem.decode(), "token": token},
    }


def pod(session: str, node: str, image: str, port: int, pull_policy: str = "IfNotPresent") -> dict[str, Any]:
    """The agent pod for `node`. It listens on the node's IP (status.hostIP) at `port`, TLS only."""
    if not 1024 <= port <= 65535:
        raise BadInput(f"node agent port {port} is out of range", "use a port between 1024 and 65535")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(node),
            "namespace": namespace_name(session),
            "labels": {LABEL: "true", SESSION_LABEL: session},
            "annotations": {f"{LABEL}-node": node},
        },
        "spec": {
            # Bound to this node only: the scheduler never places it elsewhere.
            "nodeName": node,
            "hostPID": True,
            "hostNetwork": True,
            "dnsPolicy": "ClusterFirstWithHostNet",
            "restartPolicy": "Never",
            "automountServiceAccountToken": False,
            "terminationGracePeriodSeconds": 1,
            # Taints of the node (control plane, NoExecute faults the tests make) must not evict it.
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "agent",
                    "image": image,
                    "imagePullPolicy": pull_policy,
                    "env": [
                        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                        {"name": "DC_AGENT_LISTEN", "value": f"$(HOST_IP):{port}"},
                        {"name": "DC_AGENT_SECRETS", "value": SECRETS_DIR},
                        {"name": "PATH", "value": PATH},
                    ],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "secrets", "mountPath": SECRETS_DIR, "readOnly": True}],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
            "volumes": [{"name": "secrets", "secret": {"secretName": SECRET, "defaultMode": 0o400}}],
        },
    }
