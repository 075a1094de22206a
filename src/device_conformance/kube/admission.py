"""ValidatingAdmissionPolicies the suites use as API-level faults (e.g. to hold a controller's writes)."""

from __future__ import annotations

from kubernetes import client

from device_conformance.kube import metrics
from device_conformance.kube.client import Kube

# The API server counts every policy decision (k8s.io/apiserver pkg/admission/plugin/policy/validating/metrics:
# check_total, labelled policy, policy_binding, error_type and enforcement_action "allow" or "deny"; the same
# name and labels from 1.28 to 1.38).
POLICY_CHECKS = "apiserver_validating_admission_policy_check_total"


def deny_user_policy(name: str, user: str, *, group: str, resource: str, operations: list[str]) -> dict:
    """A policy denying `user` the given operations on group/resource (may name a subresource: a/b)."""
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {"apiGroups": [group], "apiVersions": ["*"], "operations": operations, "resources": [resource]}
                ]
            },
            "validations": [
                {
                    "expression": f"request.userInfo.username != '{user}'",
                    "message": f"denied to {user} by the conformance suite (injected fault)",
                }
            ],
        },
    }


def namespace_binding(name: str, policy: str, namespace: str) -> dict:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": policy,
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
        },
    }


def create(kube: Kube, policy: dict, binding: dict) -> None:
    api = client.AdmissionregistrationV1Api(kube.api_client)
    api.create_validating_admission_policy(policy)
    api.create_validating_admission_policy_binding(binding)


def delete(kube: Kube, policy: str, binding: str) -> None:
    api = client.AdmissionregistrationV1Api(kube.api_client)
    for call, name in (
        (api.delete_validating_admission_policy_binding, binding),
        (api.delete_validating_admission_policy, policy),
    ):
        try:
            call(name)
        except client.ApiException as exc:
            if exc.status != 404:
                raise


def impersonating(kube: Kube, user: str) -> client.ApiClient:
    """An API client acting as `user` (the admin kubeconfig may impersonate); close() it after use."""
    return client.ApiClient(
        configuration=kube.api_client.configuration, header_name="Impersonate-User", header_value=user
    )


def denials(kube: Kube, policy: str) -> int:
    """How many requests the API server has denied under `policy` since it started (dry runs included)."""
    samples = metrics.parse(metrics.apiserver_metrics(kube))
    return metrics.total(samples, POLICY_CHECKS, policy=policy, enforcement_action="deny")
