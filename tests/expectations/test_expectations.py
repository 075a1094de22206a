"""Version-dependent behaviour and known bugs are looked up from data."""

import subprocess
import sys

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.behaviour import Behaviour, Fix, KnownBug, Since, outcome
from device_conformance.expectations.deviceplugin import (
    ADMITTED_WITHOUT_DEVICES,
    PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE,
    REJECTED_UNTIL_REGISTERED,
    V1_CHECKPOINT_ON_RESTART,
)
from device_conformance.expectations.versions import KubeVersion
from device_conformance.pytest_plugin.declarative_markers import known_bug_marker

V = KubeVersion.parse


def test_behaviour_takes_the_latest_entry_at_or_below_the_version():
    assert outcome(V1_CHECKPOINT_ON_RESTART, V("1.22.0")) == ADMITTED_WITHOUT_DEVICES
    assert outcome(V1_CHECKPOINT_ON_RESTART, V("1.29.9")) == REJECTED_UNTIL_REGISTERED
    assert outcome(V1_CHECKPOINT_ON_RESTART, V("1.37.1")) == ADMITTED_WITHOUT_DEVICES
    assert V1_CHECKPOINT_ON_RESTART.at(V("1.31.0")).reference == "kubernetes#123398"


def test_behaviour_before_any_entry_is_an_error():
    with pytest.raises(LookupError, match="no recorded outcome"):
        outcome(Behaviour("x", (Since(30, "a", "ref"),)), V("1.29.0"))


def test_known_bug_marker_only_on_affected_versions():
    assert known_bug_marker(PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE, V("1.37.1")) is None
    marker = known_bug_marker(PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE, V("1.35.4"))
    assert marker is not None and marker.kwargs["strict"] is True
    reason = marker.kwargs["reason"]
    assert "kubernetes#127803" in reason and "no fix on 1.35 (mainline: 1.37.0 by kubernetes#135437)" in reason


def test_open_bug_affects_every_version_since():
    bug = KnownBug("kubernetes#1", "t", first_affected="1.20.0")
    assert not bug.affects(V("1.19.9")) and bug.affects(V("1.37.1"))
    assert "no fix released" in known_bug_marker(bug, V("1.37.1")).kwargs["reason"]


def test_expectations_stay_plain_data():
    """expectations/ is data for any consumer: importing all of it must not pull in pytest."""
    script = (
        "import sys, pkgutil, importlib, device_conformance.expectations as e\n"
        "for m in pkgutil.iter_modules(e.__path__, e.__name__ + '.'): importlib.import_module(m.name)\n"
        "print('pytest' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False", result.stdout + result.stderr


# Pre-releases: upstream's tags, ordered as upstream orders them (semver precedence).
def test_pre_release_tags_parse_with_their_module_versions():
    beta = V("1.38.0-beta.0")
    assert beta == V("v1.38.0-beta.0") == KubeVersion(1, 38, 0, "beta.0")
    assert (str(beta), beta.tag, beta.staging_tag) == ("1.38.0-beta.0", "v1.38.0-beta.0", "v0.38.0-beta.0")
    assert beta.is_prerelease and beta.release == KubeVersion(1, 38, 0) and beta.at_least(38)
    assert (str(V("1.37.1")), V("1.37.1").staging_tag, V("1.37.1").is_prerelease) == ("1.37.1", "v0.37.1", False)


def test_pre_releases_order_as_upstream_tags():
    ordered = ["1.37.2", "1.38.0-alpha.1", "1.38.0-alpha.2", "1.38.0-alpha.10", "1.38.0-beta.0", "1.38.0-rc.0"]
    ordered += ["1.38.0-rc.1", "1.38.0", "1.38.1"]
    shuffled = [ordered[i] for i in (8, 3, 0, 6, 1, 7, 4, 2, 5)]
    assert [str(v) for v in sorted(V(text) for text in shuffled)] == ordered
    assert V("1.38.0-rc.1") < V("1.38.0") and V("1.38.0") > V("1.38.0-rc.1") and V("1.38.0-beta.0") <= V("1.38.0")


@pytest.mark.parametrize("text", ["1.38.0-beta", "1.38.0-gamma.1", "1.38.0-beta.0+abc", "1.38.0-alpha.0-12-gabc"])
def test_only_upstream_pre_release_tags_are_versions_a_user_writes(text):
    with pytest.raises(BadInput):
        V(text)


@pytest.mark.parametrize(
    ("reported", "expected"),
    [
        ("v1.37.1-gke.100", "1.37.1"),  # vendor builds of a release are that release
        ("v1.37.1+k3s1", "1.37.1"),
        ("v1.38.0-beta.0", "1.38.0-beta.0"),
        # a master tree: `git describe`, and hack/lib/version.sh's semver rewrite of it
        ("v1.39.0-alpha.0-123-g0123456789abcd", "1.39.0-alpha.0"),
        ("v1.39.0-alpha.0-123+0123456789abcd", "1.39.0-alpha.0"),
        ("v1.39.0-alpha.0.123+0123456789abcd", "1.39.0-alpha.0"),
        ("v1.38.0-rc.1.4+0123456789abcd", "1.38.0-rc.1"),
    ],
)
def test_reported_pre_releases_keep_their_tag(reported, expected):
    assert str(KubeVersion.from_reported(reported)) == expected


def test_a_master_build_sorts_below_the_next_alpha():
    master = KubeVersion.from_reported("v1.39.0-alpha.0-123+0123456789abcd")
    assert V("1.38.5") < master < V("1.39.0-alpha.1") < V("1.39.0")


def test_a_fix_first_released_in_an_alpha_counts_for_the_later_beta():
    bug = KnownBug(
        "kubernetes#1",
        "x",
        "1.34.0",
        fixes=(Fix("1.38.0-alpha.1", "kubernetes#3"), Fix("1.37.2", "kubernetes#2")),
    )
    verdicts = {text: bug.affects(V(text)) for text in ("1.37.1", "1.37.2", "1.38.0-alpha.1", "1.38.0-beta.0")}
    verdicts["master"] = bug.affects(KubeVersion.from_reported("v1.38.0-alpha.0-5+0123456789abcd"))
    assert verdicts == {
        "1.37.1": True,
        "1.37.2": False,
        "1.38.0-alpha.1": False,
        "1.38.0-beta.0": False,
        "master": True,
    }
    assert bug.describe_fix(V("1.38.0-beta.0")) == "fixed in 1.38.0-alpha.1 by kubernetes#3"
    assert bug.affects(V("1.39.0-alpha.1")) is False  # a later minor has the mainline fix


def test_a_fix_released_in_x_y_0_misses_its_pre_releases():
    bug = KnownBug("kubernetes#1", "x", "1.34.0", fixes=(Fix("1.37.0", "kubernetes#2"),))
    assert [bug.affects(V(t)) for t in ("1.37.0-rc.1", "1.37.0", "1.38.0-alpha.1")] == [True, False, False]
