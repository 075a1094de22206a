"""Version-dependent behaviour and known bugs are looked up from data."""

import subprocess
import sys

import pytest

from device_conformance.expectations.behaviour import Behaviour, KnownBug, Since, outcome
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
