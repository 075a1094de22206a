"""Every piece of version data on every matrix release, written out by hand per release: what `make matrix`
configures and expects on 1.31.4 ... 1.37.1. (Known bugs per matrix release: test_version_data.MATRIX_TABLE.)

A row is the newest patch of its minor that builds here (expectations/versions.py MATRIX_VERSIONS); each
cell is what the release's module source says (see the comment above each entry in expectations/).
"""

from __future__ import annotations

import pytest

from device_conformance.expectations import bugtable, cluster, deviceplugin, dra
from device_conformance.expectations.behaviour import outcome
from device_conformance.expectations.versions import MATRIX_VERSIONS, KubeVersion

V = KubeVersion.parse
ADMITTED = deviceplugin.ADMITTED_WITHOUT_DEVICES
REPLACED = deviceplugin.REGISTRATION_REPLACES_THE_CONNECTION
REFUSED = deviceplugin.REGISTRATION_REFUSED_ALREADY_CONNECTED

# Behaviour per matrix release: the pre-1.20 checkpoint (no v1 reader from 1.31.0, #123398), the checkpoint with a
# wrong checksum (state lost on every release), a Register on a socket the kubelet is connected to (replaced before
# 1.37, refused from 1.37.0, #135437).
BEHAVIOURS = {
    deviceplugin.V1_CHECKPOINT_ON_RESTART.name: [ADMITTED] * 7,
    deviceplugin.CORRUPT_CHECKPOINT_ON_RESTART.name: [ADMITTED] * 7,
    deviceplugin.REGISTER_ON_A_CONNECTED_SOCKET.name: [REPLACED] * 6 + [REFUSED],
}

DRA = {"DynamicResourceAllocation": True}
TAINTS = {"DRADeviceTaints": True}
RULES = {"DRADeviceTaintRules": True}
BETA1 = "resource.k8s.io/v1beta1=true"
ALPHA3 = "resource.k8s.io/v1alpha3=true"
BETA2 = "resource.k8s.io/v1beta2=true"
CGROUP_V1 = {"failCgroupV1": False}

# release: (feature gates, --runtime-config, kubelet config, claims' API version or None, DeviceTaintRule API
# version, device taints, effect None, then the features the suites' `since` markers name, as T/F: seamless DRA
# driver update (1.33), the dra_resource_claims_in_use metric (1.34), partitionable devices on by default (1.36),
# device health in the pod status on by default (1.36), the kubelet's DRA connection monitoring (1.34),
# DRA claims in podresources List (1.34)).
SETTINGS = {
    "1.31.4": ({}, [], {}, None, "resource.k8s.io/v1alpha3", False, False, "FFFFFF"),
    "1.32.5": (DRA, [BETA1], {}, "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3", False, False, "FFFFFF"),
    "1.33.13": (
        DRA | TAINTS,
        [BETA1, ALPHA3],
        {},
        "resource.k8s.io/v1beta1",
        "resource.k8s.io/v1alpha3",
        True,
        False,
        "TFFFFF",
    ),
    "1.34.10": (TAINTS, [ALPHA3], {}, "resource.k8s.io/v1", "resource.k8s.io/v1alpha3", True, False, "TTFFTT"),
    "1.35.8": (
        TAINTS | RULES,
        [ALPHA3],
        CGROUP_V1,
        "resource.k8s.io/v1",
        "resource.k8s.io/v1alpha3",
        True,
        True,
        "TTFFTT",
    ),
    "1.36.4": (RULES, [BETA2], CGROUP_V1, "resource.k8s.io/v1", "resource.k8s.io/v1beta2", True, True, "TTTTTT"),
    "1.37.1": ({}, [], CGROUP_V1, "resource.k8s.io/v1", "resource.k8s.io/v1", True, True, "TTTTTT"),
}


def test_the_tables_cover_exactly_the_matrix_and_every_behaviour():
    assert [V(release) for release in SETTINGS] == list(MATRIX_VERSIONS)
    assert sorted(BEHAVIOURS) == sorted(behaviour.name for behaviour in bugtable.BEHAVIOURS)


@pytest.mark.parametrize("behaviour", bugtable.BEHAVIOURS, ids=lambda behaviour: behaviour.name)
def test_every_behaviour_on_every_matrix_release(behaviour):
    seen = [outcome(behaviour, release) for release in MATRIX_VERSIONS]
    assert seen == BEHAVIOURS[behaviour.name], [str(release) for release in MATRIX_VERSIONS]


@pytest.mark.parametrize("release", sorted(SETTINGS, key=V))
def test_settings_and_dra_facts_on_every_matrix_release(release):
    gates, runtime, kubelet, claims, rules, taints, none_effect, features = SETTINGS[release]
    version = V(release)
    settings = cluster.settings_for(version)
    assert (settings.feature_gates, settings.runtime_config, settings.kubelet_config) == (gates, runtime, kubelet)
    assert dra.supports_dra(version) == (claims is not None)
    if claims is None:
        with pytest.raises(LookupError):
            dra.resource_api_version(version)
    else:
        assert dra.resource_api_version(version) == claims
    assert dra.device_taint_rule_api_version(version) == rules
    assert (dra.has_device_taints(version), dra.has_none_taint_effect(version)) == (taints, none_effect)
    minors = (
        dra.FIRST_SEAMLESS_DRIVER_UPDATE_MINOR,
        dra.FIRST_CLAIMS_IN_USE_METRIC_MINOR,
        V(dra.PARTITIONABLE_DEVICES_SINCE + ".0").minor,
        dra.FIRST_RESOURCE_HEALTH_STATUS_MINOR,
        dra.FIRST_DRA_CONNECTION_MONITORING_MINOR,
        dra.FIRST_PODRESOURCES_DRA_MINOR,
    )
    assert "".join("T" if version.at_least(minor) else "F" for minor in minors) == features
