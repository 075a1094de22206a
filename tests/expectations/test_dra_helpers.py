"""Pure helpers behind the dra/taints suites: manifests, per-version facts, known-bug data, CDI detection."""

import pytest

from device_conformance.expectations import dra as facts
from device_conformance.expectations.versions import KubeVersion
from device_conformance.kube import admission, dra
from device_conformance.node import cri


def test_pod_with_template_claim_uses_it_in_every_container():
    pod = {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}
    out = dra.with_claims(pod, templates={"dev": "tmpl"})
    assert out["spec"]["resourceClaims"] == [{"name": "dev", "resourceClaimTemplateName": "tmpl"}]
    assert [c["resources"]["claims"] for c in out["spec"]["containers"]] == [[{"name": "dev"}]] * 2
    assert "resourceClaims" not in pod["spec"], "the input manifest is not modified"


def test_device_request_v1_shape_with_tolerations():
    tol = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}
    req = dra.device_request("cls", tolerations=[tol], selectors=['device.driver == "x"'])
    assert req == {
        "name": "dev",
        "exactly": {
            "deviceClassName": "cls",
            "count": 1,
            "selectors": [{"cel": {"expression": 'device.driver == "x"'}}],
            "tolerations": [tol],
        },
    }


def test_device_taint_rule_selects_by_driver_and_device():
    rule = dra.device_taint_rule_manifest(
        "r", dra.device_taint("k", "NoExecute"), "resource.k8s.io/v1", driver="d.example.com", device="dev-0"
    )
    assert rule["spec"] == {
        "deviceSelector": {"driver": "d.example.com", "device": "dev-0"},
        "taint": {"key": "k", "effect": "NoExecute"},
    }


@pytest.mark.parametrize(
    ("version", "claims", "rules"),
    [
        ("1.33.0", "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3"),
        ("1.35.2", "resource.k8s.io/v1", "resource.k8s.io/v1alpha3"),
        ("1.36.5", "resource.k8s.io/v1", "resource.k8s.io/v1beta2"),
        ("1.37.1", "resource.k8s.io/v1", "resource.k8s.io/v1"),
    ],
)
def test_resource_api_versions(version, claims, rules):
    v = KubeVersion.parse(version)
    assert (facts.resource_api_version(v), facts.device_taint_rule_api_version(v)) == (claims, rules)


def test_shared_claim_eviction_bug_affects_1_35_not_1_36():
    bug = facts.SHARED_CLAIM_STALE_CONSUMER_EVICTION
    assert bug.affects(KubeVersion.parse("1.35.0"))
    assert not bug.affects(KubeVersion.parse("1.36.0"))
    assert not bug.affects(KubeVersion.parse("1.37.1"))
    assert bug.issue == "kubernetes#135686"


def test_deny_policy_names_the_user_and_subresource():
    policy = admission.deny_user_policy("p", "system:x", group="g", resource="r/status", operations=["UPDATE"])
    rule = policy["spec"]["matchConstraints"]["resourceRules"][0]
    assert (rule["resources"], rule["operations"]) == (["r/status"], ["UPDATE"])
    assert "'system:x'" in policy["spec"]["validations"][0]["expression"]
    binding = admission.namespace_binding("b", "p", "ns1")
    assert binding["spec"]["matchResources"]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "ns1"
    }


@pytest.mark.parametrize(
    ("info", "enabled", "says"),
    [
        ({"config": {"enableCDI": True, "cdiSpecDirs": ["/var/run/cdi"]}}, True, "enableCDI=true"),
        ({"config": {"enableCDI": False}}, False, "enableCDI=false"),
        ({"config": {"enableSelinux": False}}, False, "no enableCDI setting"),
        ({"config": "not json"}, False, "no JSON 'config'"),
        ({}, False, "no JSON 'config'"),
    ],
)
def test_cdi_detection_from_cri_status_info(info, enabled, says):
    got, why = cri.cdi_support(info, "containerd x")
    assert got is enabled and says in why


def test_claims_for_v1beta1_carry_the_exact_request_inline():
    """1.32-1.33 serve claims as v1beta1, whose DeviceRequest has no `exactly` (k8s.io/api v0.33.13)."""
    from device_conformance.kube import dra as kube_dra

    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute"}
    request = kube_dra.device_request("cls", count=2, selectors=["true"], tolerations=[toleration])
    spec = kube_dra.claim_spec([request])
    claim = kube_dra.in_api_version(kube_dra.claim_manifest("c", spec, "resource.k8s.io/v1beta1"))
    inline = {
        "name": "dev",
        "deviceClassName": "cls",
        "count": 2,
        "selectors": [{"cel": {"expression": "true"}}],
        "tolerations": [toleration],
    }
    assert claim["spec"]["devices"]["requests"] == [inline]
    template = kube_dra.in_api_version(kube_dra.claim_template_manifest("t", spec, "resource.k8s.io/v1beta1"))
    assert template["spec"]["spec"]["devices"]["requests"] == [inline]
    # v1beta2 and v1 keep `exactly`; the caller's body is not changed.
    for version in ("resource.k8s.io/v1beta2", "resource.k8s.io/v1"):
        body = kube_dra.claim_manifest("c", spec, version)
        assert kube_dra.in_api_version(body) == body
    assert spec["devices"]["requests"][0]["exactly"]["count"] == 2
