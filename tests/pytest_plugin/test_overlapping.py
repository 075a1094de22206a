"""Named scenario fixtures start together before a module's first test (pytest_plugin/overlapping.py)."""

from __future__ import annotations

pytest_plugins = ["pytester"]

CONFTEST = """
import pytest
from device_conformance.expectations.versions import KubeVersion
from device_conformance.expectations.behaviour import ClusterVersions

@pytest.fixture(scope="session")
def cluster_versions():
    version = KubeVersion.parse("1.34.2")
    return ClusterVersions(version, version)
"""

SCENARIOS = """
import pytest

pytestmark = pytest.mark.overlapping("restarted", "killed", "unhealthy")
STARTED = []

@pytest.fixture(scope="module")
def restarted():
    STARTED.append("restarted")
    yield "restarted"
    STARTED.append("restarted ended")

@pytest.fixture(scope="module")
def killed():
    STARTED.append("killed")
    return "killed"

@pytest.fixture(scope="module")
def unhealthy():
    STARTED.append("unhealthy")
    return "unhealthy"

def test_killed(killed):
    print("started:", STARTED)

def test_plain():
    pass

@pytest.mark.since("1.35")
def test_later_release(unhealthy):
    pass

def test_restarted(restarted):
    pass
"""


def _tree(pytester, scenarios: str = SCENARIOS) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_scenarios=scenarios)


def test_every_named_fixture_a_test_asks_for_starts_before_the_first_test_in_the_markers_order(pytester):
    _tree(pytester)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, skipped=1)
    # unhealthy's only test skips below 1.35: it does not start on 1.34.2
    assert "started: ['restarted', 'killed']\n" in result.stdout.str()


def test_a_test_selected_alone_starts_only_its_own_scenario(pytester):
    _tree(pytester)
    result = pytester.runpytest("-s", "-k", "killed", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=3)
    assert "started: ['killed']\n" in result.stdout.str()


def test_a_name_no_test_asks_for_is_a_usage_error_naming_the_fix(pytester):
    _tree(pytester, SCENARIOS.replace('"unhealthy")', '"unhealthy", "revived")'))
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 4, result.stdout.str()
    result.stderr.fnmatch_lines(
        ["*test_scenarios.py: @pytest.mark.overlapping names 'revived', which no test of the module asks for; *"]
    )


def test_a_marker_without_names_is_a_usage_error(pytester):
    _tree(
        pytester,
        SCENARIOS.replace('pytest.mark.overlapping("restarted", "killed", "unhealthy")', "pytest.mark.overlapping"),
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    assert result.ret == 4, result.stdout.str()
    result.stderr.fnmatch_lines(["*@pytest.mark.overlapping takes the names of the module's scenario fixtures*"])
