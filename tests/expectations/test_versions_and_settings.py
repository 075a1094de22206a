import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion


def test_parse_accepts_with_and_without_v_prefix():
    assert KubeVersion.parse("v1.37.1") == KubeVersion.parse("1.37.1") == KubeVersion(1, 37, 1)
    assert KubeVersion.parse("1.37.1").tag == "v1.37.1"
    assert KubeVersion.parse("1.37.1").staging_tag == "v0.37.1"


@pytest.mark.parametrize("text", ["1.37", "latest", "1.37.x", ""])
def test_parse_rejects_non_release_versions_with_the_fix(text):
    with pytest.raises(BadInput) as excinfo:
        KubeVersion.parse(text)
    assert "MAJOR.MINOR.PATCH" in excinfo.value.fix


@pytest.mark.parametrize(
    "text,expected",
    [
        ("v1.37.1", (1, 37, 1)),
        ("v1.37.1-gke.100", (1, 37, 1)),
        ("v1.36.4+k3s1", (1, 36, 4)),
        ("1.38.0-alpha.1", (1, 38, 0, "alpha.1")),
    ],
)
def test_reported_versions_keep_their_release_part(text, expected):
    assert KubeVersion.from_reported(text) == KubeVersion(*expected)


def test_a_reported_version_that_is_not_one_is_refused():
    with pytest.raises(BadInput, match="'latest'"):
        KubeVersion.from_reported("latest")


def test_previous_minor():
    assert KubeVersion(1, 36, 4).previous_minor_of(KubeVersion(1, 37, 1))
    assert not KubeVersion(1, 35, 4).previous_minor_of(KubeVersion(1, 37, 1))
    assert not KubeVersion(1, 37, 0).previous_minor_of(KubeVersion(1, 37, 1))


def test_versions_order_numerically():
    assert KubeVersion.parse("1.9.0") < KubeVersion.parse("1.10.0") < KubeVersion.parse("1.37.1")
    assert DEFAULT_K8S_VERSION.at_least(37)


def test_cgroup_v1_override_only_from_1_35():
    assert settings_for(KubeVersion(1, 34, 4)).kubelet_config == {}
    assert settings_for(KubeVersion(1, 35, 0)).kubelet_config == {"failCgroupV1": False}


def test_1_37_needs_no_gates_or_runtime_config():
    settings = settings_for(KubeVersion(1, 37, 1))
    assert settings.feature_gates == {} and settings.runtime_config == []
    assert settings.gates_flag() == []


def test_1_36_turns_on_device_taint_rules_and_v1beta2():
    settings = settings_for(KubeVersion(1, 36, 5))
    assert settings.feature_gates == {"DRADeviceTaintRules": True}
    assert settings.runtime_config == ["resource.k8s.io/v1beta2=true"]
    assert settings.gates_flag() == ["--feature-gates=DRADeviceTaintRules=true"]


def test_1_35_uses_alpha_taint_api():
    settings = settings_for(KubeVersion(1, 35, 4))
    assert settings.feature_gates == {"DRADeviceTaintRules": True, "DRADeviceTaints": True}
    assert settings.runtime_config == ["resource.k8s.io/v1alpha3=true"]
