"""Every piece of version data on every matrix release, written out by hand per release: what `make matrix`
configures and expects on 1.31.4 ... 1.37.2, and on the older releases the suites also run on, 1.28.15 ...
1.30.14 (device-plugin and smoke suites only). (Known bugs per release: test_version_data.MATRIX_TABLE and
OLDER_TABLE.)

A row is the newest patch of its minor that builds here (expectations/versions.py MATRIX_VERSIONS and
OLDER_VERSIONS); each cell is what the release's module source says (see the comment above each entry in
expectations/).
"""

from __future__ import annotations

import pytest

from device_conformance.expectations import bugtable, cluster, deviceplugin, dra
from device_conformance.expectations.behaviour import outcome
from device_conformance.expectations.versions import MATRIX_VERSIONS, OLDER_VERSIONS, KubeVersion

V = KubeVersion.parse
ADMITTED = deviceplugin.ADMITTED_WITHOUT_DEVICES
REJECTED = deviceplugin.REJECTED_UNTIL_REGISTERED
REPLACED = deviceplugin.REGISTRATION_REPLACES_THE_CONNECTION
REFUSED = deviceplugin.REGISTRATION_REFUSED_ALREADY_CONNECTED
OMITS = deviceplugin.PODRESOURCES_OMITS_SIDECARS
LISTS = deviceplugin.PODRESOURCES_LISTS_SIDECARS
NO_HEALTH = dra.HEALTH_APIS_NONE
V1ALPHA1 = dra.HEALTH_APIS_V1ALPHA1
V1_FIRST = dra.HEALTH_APIS_V1_THEN_V1ALPHA1

# Every release with a row below, oldest first: the three older ones, then the matrix.
RELEASES = (*OLDER_VERSIONS, *MATRIX_VERSIONS)

# Behaviour per release (1.28.15, 1.29.15, 1.30.14, then the matrix): the pre-1.20 checkpoint (recovered by the v1
# reader of #102882 until 1.30, no v1 reader from 1.31.0, #123398), the checkpoint with a wrong checksum (state lost
# on every release), a Register on a socket the kubelet is connected to (replaced before 1.37, read back to module
# source v1.28.15; refused from 1.37.0, #135437), a podresources entry of a pod with a sidecar (the sidecar
# is missing before 1.30, listed from 1.30.0, #120718), the DRAResourceHealth versions the kubelet opens (none
# before 1.34, #130606; v1alpha1 alone in 1.34-1.36; v1 first from 1.37.0-rc.0, #139477).
BEHAVIOURS = {
    deviceplugin.V1_CHECKPOINT_ON_RESTART.name: [REJECTED] * 3 + [ADMITTED] * 7,
    deviceplugin.CORRUPT_CHECKPOINT_ON_RESTART.name: [ADMITTED] * 10,
    deviceplugin.REGISTER_ON_A_CONNECTED_SOCKET.name: [REPLACED] * 9 + [REFUSED],
    deviceplugin.PODRESOURCES_SIDECAR_ENTRY.name: [OMITS] * 2 + [LISTS] * 8,
    dra.HEALTH_API_PREFERENCE.name: [NO_HEALTH] * 6 + [V1ALPHA1] * 3 + [V1_FIRST],
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
    # 1.28-1.30: nothing turned on (no resource.k8s.io version the DRA suites fit, no device taints, cgroup v1 fine).
    "1.28.15": ({}, [], {}, None, "resource.k8s.io/v1alpha3", False, False, "FFFFFF"),
    "1.29.15": ({}, [], {}, None, "resource.k8s.io/v1alpha3", False, False, "FFFFFF"),
    "1.30.14": ({}, [], {}, None, "resource.k8s.io/v1alpha3", False, False, "FFFFFF"),
    "1.31.4": ({}, [], {}, None, "resource.k8s.io/v1alpha3", False, False, "FFFFFF"),
    "1.32.9": (DRA, [BETA1], {}, "resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3", False, False, "FFFFFF"),
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
    "1.34.12": (TAINTS, [ALPHA3], {}, "resource.k8s.io/v1", "resource.k8s.io/v1alpha3", True, False, "TTFFTT"),
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
    "1.36.5": (RULES, [BETA2], CGROUP_V1, "resource.k8s.io/v1", "resource.k8s.io/v1beta2", True, True, "TTTTTT"),
    "1.37.2": ({}, [], CGROUP_V1, "resource.k8s.io/v1", "resource.k8s.io/v1", True, True, "TTTTTT"),
}


def test_the_tables_cover_exactly_the_matrix_and_every_behaviour():
    assert [V(release) for release in SETTINGS] == list(RELEASES)
    assert sorted(RELEASES) == list(RELEASES) and not set(OLDER_VERSIONS) & set(MATRIX_VERSIONS)
    assert sorted(BEHAVIOURS) == sorted(behaviour.name for behaviour in bugtable.BEHAVIOURS)


@pytest.mark.parametrize("behaviour", bugtable.BEHAVIOURS, ids=lambda behaviour: behaviour.name)
def test_every_behaviour_on_every_release(behaviour):
    seen = [outcome(behaviour, release) for release in RELEASES]
    assert seen == BEHAVIOURS[behaviour.name], [str(release) for release in RELEASES]


@pytest.mark.parametrize("release", sorted(SETTINGS, key=V))
def test_settings_and_dra_facts_on_every_release(release):
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
