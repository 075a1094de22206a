"""KUBELET_VERSION: a node kubelet older than the control plane (version skew), and the known bugs that are
judged by the release of the component they live in."""

import pytest
from declared_runs import run

from device_conformance.core.errors import BadInput
from device_conformance.expectations import dra
from device_conformance.expectations.behaviour import ClusterVersions, KnownBug
from device_conformance.expectations.deviceplugin import PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion
from device_conformance.settings import resolve

pytest_plugins = ["pytester"]

V = KubeVersion.parse


def test_the_kubelet_defaults_to_the_version_under_test():
    settings = resolve({"k8s_version": "1.36.4"}, {})
    assert settings.kubelet_version.value == V("1.36.4")
    assert str(settings.kubelet_version.source) == "default: the version under test"


def test_an_older_kubelet_within_the_skew_is_taken_and_upgrade_tests_start_below_it():
    settings = resolve({"kubelet_version": "1.34.10"}, {"K8S_VERSION": "1.37.1", "UPGRADE_FROM": "1.33.13"})
    assert (settings.k8s_version.value, settings.kubelet_version.value) == (V("1.37.1"), V("1.34.10"))
    assert settings.upgrade_from.value == V("1.33.13")


def test_upgrade_from_must_be_older_than_the_skewed_kubelet():
    with pytest.raises(
        BadInput, match=r"UPGRADE_FROM='1.35.8' \(environment\) is not older than the version under test 1.34.10"
    ):
        resolve({"kubelet_version": "1.34.10"}, {"UPGRADE_FROM": "1.35.8"})


@pytest.mark.parametrize(
    ("kubelet", "control_plane", "problem", "fix"),
    [
        ("1.37.1", "1.36.4", "is newer than the control plane's 1.36.4", "set K8S_VERSION to 1.37.1 or newer"),
        ("1.33.13", "1.37.1", "is more than 3 minors older than the control plane's 1.37.1", "use a 1.34.x or newer"),
    ],
)
def test_a_kubelet_outside_the_skew_policy_is_refused_with_the_fix(kubelet, control_plane, problem, fix):
    with pytest.raises(BadInput) as caught:
        resolve({"kubelet_version": kubelet, "k8s_version": control_plane}, {})
    assert f"--kubelet-version {kubelet!r} {problem}" in caught.value.problem
    assert fix in caught.value.fix and "or drop --kubelet-version for the default" in caught.value.fix


def test_only_the_local_provider_swaps_the_kubelet():
    with pytest.raises(BadInput, match="only the local provider runs a kubelet of another release") as caught:
        resolve({"provider": "kind"}, {"KUBELET_VERSION": "1.36.4"})
    assert caught.value.fix == "use --provider local, or unset KUBELET_VERSION for the default"


def test_a_kubelet_version_equal_to_the_control_plane_is_no_skew_for_any_provider():
    settings = resolve({"provider": "kind", "kubelet_version": str(DEFAULT_K8S_VERSION)}, {})
    assert settings.kubelet_version.value == settings.k8s_version.value


SKEWED = ClusterVersions(kubelet=V("1.34.10"), control_plane=V("1.37.1"))


def test_kubelet_bugs_are_judged_on_the_kubelet_and_controller_bugs_on_the_control_plane():
    # #127803 (kubelet) affects 1.34.10 and is fixed in 1.37.0; #134434 (eviction controller) the other way round.
    assert PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE.judged_on(SKEWED) == V("1.34.10")
    assert PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE.affects(PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE.judged_on(SKEWED))
    assert dra.NOEXECUTE_TOLERATION_IGNORED.judged_on(SKEWED) == V("1.37.1")
    assert not dra.NOEXECUTE_TOLERATION_IGNORED.affects(dra.NOEXECUTE_TOLERATION_IGNORED.judged_on(SKEWED))


def test_the_bugs_outside_the_kubelet_are_the_eviction_controllers_and_the_schedulers():
    from device_conformance.expectations.bugtable import KNOWN_BUGS

    outside = {bug.issue: bug.component for bug in KNOWN_BUGS if bug.component != "kubelet"}
    assert outside == {
        "kubernetes#134152": "kube-controller-manager",
        "kubernetes#134434": "kube-controller-manager",
        "kubernetes#135686": "kube-controller-manager",
        "kubernetes#141290": "kube-controller-manager",
        "kubernetes#141620": "kube-scheduler",
        "kubernetes#134789": "kube-scheduler",
    }


def test_a_scheduler_bug_is_judged_on_the_control_plane():
    # #141620 (the scheduler's view of DeviceTaintRules) is fixed in 1.37.1 and affects 1.34.10.
    assert dra.NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE.judged_on(SKEWED) == V("1.37.1")
    assert not dra.NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE.affects(V("1.37.1"))
    assert dra.NIL_SELECTOR_RULE_TAINTS_EVERY_DEVICE.affects(V("1.34.10"))


def test_an_unknown_component_is_refused():
    with pytest.raises(ValueError, match="component 'kube-proxy' is not one of kubelet, kube-controller-manager"):
        KnownBug("kubernetes#1", "a bug", "1.30.0", component="kube-proxy")


CONTROLLER_BUG_TEST = """
import pytest
from device_conformance.expectations.dra import NOEXECUTE_TOLERATION_IGNORED as BUG

@pytest.fixture(scope="session")
def control_plane_version():
    from device_conformance.expectations.versions import KubeVersion
    return KubeVersion.parse({control_plane!r})

@pytest.mark.known_bug(BUG)
def test_evicted():
    assert False, "evicted at once"
"""


@pytest.mark.parametrize(("control_plane", "outcome"), [("1.34.10", {"xfailed": 1}), ("1.37.1", {"failed": 1})])
def test_a_controller_bug_marker_follows_the_control_plane_not_the_kubelet(pytester, control_plane, outcome):
    # The kubelet is 1.37.1 in both runs (kube_version); only the control plane's release decides.
    result = run(pytester, "1.37.1", CONTROLLER_BUG_TEST.format(control_plane=control_plane))
    result.assert_outcomes(**outcome)


@pytest.mark.parametrize(
    ("control_plane", "kubelet", "extra"),
    [
        ("1.34.10", "1.33.13", ["resource.k8s.io/v1beta1=true"]),  # the 1.33 kubelet reads v1beta1 claims
        ("1.37.1", "1.34.10", []),  # both read v1
        ("1.37.1", "1.37.1", []),  # no skew
        ("1.33.13", "1.32.5", []),  # v1beta1 is already on for the 1.33 control plane
    ],
)
def test_the_control_plane_serves_the_resource_api_the_older_kubelet_reads(control_plane, kubelet, extra):
    from device_conformance.expectations.cluster import control_plane_settings_for, settings_for

    own = settings_for(V(control_plane)).runtime_config
    assert control_plane_settings_for(V(control_plane), V(kubelet)).runtime_config == own + extra
