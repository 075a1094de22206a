"""`device-conformance bisect`: the releases in between and the binary search (the steps are e2e runs)."""

import pytest

from device_conformance.cli import bisect
from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion

V = KubeVersion.parse


def served(*versions):
    wanted = {V(v) for v in versions}
    return lambda version: version in wanted


def test_releases_in_between_cross_minors_and_skip_refused_patches():
    exists = served("1.35.5", "1.35.6", "1.35.8", "1.36.0", "1.36.1", "1.36.4", "1.37.0")
    releases = bisect.releases_between(V("1.35.4"), V("1.37.1"), exists)
    assert [str(v) for v in releases] == [
        "1.35.4",
        "1.35.5",
        "1.35.6",
        "1.35.8",
        "1.36.0",
        "1.36.1",
        "1.36.4",
        "1.37.0",
        "1.37.1",
    ]


def test_pre_releases_are_bisected_when_an_endpoint_is_one():
    exists = served("1.37.2", "1.38.0-alpha.0", "1.38.0-alpha.1", "1.38.0-alpha.2", "1.38.0-alpha.3", "1.38.0-beta.0")
    releases = bisect.releases_between(V("1.37.1"), V("1.38.0-beta.0"), exists)
    # alpha.0 is no release (the tag at the 1.37 branch cut); the 1.37 patch releases come first
    assert [str(v) for v in releases] == [
        "1.37.1",
        "1.37.2",
        "1.38.0-alpha.1",
        "1.38.0-alpha.2",
        "1.38.0-alpha.3",
        "1.38.0-beta.0",
    ]
    between = bisect.releases_between(
        V("1.38.0-alpha.2"), V("1.38.1"), served("1.38.0-beta.0", "1.38.0-rc.0", "1.38.0")
    )
    assert [str(v) for v in between] == ["1.38.0-alpha.2", "1.38.0-beta.0", "1.38.0-rc.0", "1.38.0", "1.38.1"]


def test_release_endpoints_probe_no_pre_release():
    asked = []

    def exists(version):
        asked.append(str(version))
        return False

    bisect.releases_between(V("1.37.1"), V("1.38.1"), exists)
    assert [v for v in asked if "-" in v] == []


def test_search_finds_the_first_release_with_the_newer_outcome():
    releases = [V(v) for v in ("1.36.2", "1.36.3", "1.36.4", "1.37.0", "1.37.1", "1.37.2")]
    fixed_in = V("1.37.0")
    asked = []

    def outcome(version):
        asked.append(str(version))
        return bisect.PASS if version >= fixed_in else bisect.FAIL

    assert bisect.search(releases, outcome, lambda line: None) == fixed_in
    assert asked[:2] == ["1.36.2", "1.37.2"]
    assert len(asked) <= 2 + 3  # the endpoints, then log2 of the rest


def test_untestable_releases_are_skipped():
    releases = [V(v) for v in ("1.36.4", "1.36.5", "1.37.0", "1.37.1")]

    def outcome(version):
        if version == V("1.36.5"):
            return bisect.UNTESTABLE  # no checksum entry: go refuses it
        return bisect.PASS if version >= V("1.37.0") else bisect.FAIL

    assert bisect.search(releases, outcome, lambda line: None) == V("1.37.0")


def test_endpoints_with_the_same_outcome_are_refused():
    with pytest.raises(BadInput, match="give a --good release where the test passes"):
        bisect.search([V("1.36.4"), V("1.37.1")], lambda version: bisect.PASS, lambda line: None)


@pytest.mark.parametrize(
    ("step", "swap", "expected"),
    [
        ("1.36.4", bisect.SWAP_KUBELET, ("1.37.1", "1.36.4")),  # only the kubelet is built for the step
        ("1.34.10", bisect.SWAP_KUBELET, ("1.37.1", "1.34.10")),  # three minors: still within the skew policy
        ("1.33.13", bisect.SWAP_KUBELET, ("1.33.13", None)),  # four: the step's own control plane
        ("1.37.1", bisect.SWAP_KUBELET, ("1.37.1", None)),  # the newer endpoint itself
        ("1.36.4", bisect.SWAP_ALL, ("1.36.4", None)),  # a control-plane change: whole clusters
    ],
)
def test_each_step_swaps_only_the_kubelet_within_the_skew_policy(step, swap, expected):
    control_plane, kubelet = bisect.step_versions(V(step), V("1.37.1"), swap)
    assert (str(control_plane), kubelet and str(kubelet)) == expected


def test_a_kubelet_step_runs_setup_and_pytest_with_both_versions():
    from device_conformance.cli import release_run

    assert release_run.versions(V("1.37.1"), V("1.36.4")) == ["--k8s-version", "1.37.1", "--kubelet-version", "1.36.4"]
    assert release_run.versions(V("1.37.1"), None) == ["--k8s-version", "1.37.1"]
