"""`device-conformance bisect`: the releases in between and the binary search (the steps are e2e runs)."""

import pytest

from device_conformance.cli import bisect
from device_conformance.errors import BadInput
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
