"""The declarative markers (scenario, since, known_bug) in real pytest runs of small test files.

Each run's conftest stands in a fixed `kube_version` for the version a cluster would report, so no
cluster is needed; the plugin itself loads through its pytest11 entry point as in the suites.
"""

import json
import xml.etree.ElementTree as ET

import pytest
from declared_runs import AFFECTED, FIXED, ROLLOUT_BUG, run

pytest_plugins = ["pytester"]

SINCE_136 = """
import pytest

@pytest.mark.since("1.36", "ResourceHealthStatus is on by default (beta)")
def test_health():
    pass
"""


def test_since_skips_older_versions_naming_the_version_they_need(pytester):
    result = run(pytester, "1.35.4", SINCE_136)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*needs Kubernetes 1.36 (ResourceHealthStatus is on by default (beta)); the cluster under test runs 1.35.4*"]
    )


def test_since_runs_on_that_version_and_later(pytester):
    run(pytester, "1.36.0", SINCE_136).assert_outcomes(passed=1)
    run(pytester, "1.37.1", SINCE_136).assert_outcomes(passed=1)


def test_since_with_a_patch_release(pytester):
    source = "import pytest\n\n@pytest.mark.since('1.35.2')\ndef test_x():\n    pass\n"
    run(pytester, "1.35.1", source).assert_outcomes(skipped=1)
    run(pytester, "1.35.2", source).assert_outcomes(passed=1)


BUG_SHOWN = (
    "import pytest\n"
    + ROLLOUT_BUG
    + """
@pytest.mark.known_bug(BUG)
def test_rollout():
    assert False, "allocatable dropped to 0"
"""
)


def test_known_bug_is_a_strict_xfail_on_affected_versions_naming_issue_and_fix(pytester):
    result = run(pytester, AFFECTED, BUG_SHOWN)
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(
        ["*known upstream bug kubernetes#127803 on Kubernetes 1.35.4*no fix on 1.35 (mainline: 1.37.0 by *#135437)*"]
    )


def test_known_bug_does_not_excuse_a_failure_on_fixed_versions(pytester):
    result = run(pytester, FIXED, BUG_SHOWN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*allocatable dropped to 0*"])


def test_known_bug_passing_on_an_affected_version_is_a_failure(pytester):
    """XPASS(strict): the data says the version has the bug but the test passed, so the data is wrong."""
    source = "import pytest\n" + ROLLOUT_BUG + "\n@pytest.mark.known_bug(BUG)\ndef test_rollout():\n    pass\n"
    result = run(pytester, AFFECTED, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*kubernetes#127803*"])
    run(pytester, FIXED, source).assert_outcomes(passed=1)


def test_open_bug_is_an_xfail_without_a_fix_named(pytester):
    source = """
import pytest
from device_conformance.expectations.deviceplugin import EXTENDED_RESOURCES_NOT_RESET

@pytest.mark.known_bug(EXTENDED_RESOURCES_NOT_RESET)
def test_reset():
    assert False
"""
    result = run(pytester, "1.37.1", source)
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*kubernetes#126943*no fix released*"])


@pytest.mark.parametrize(
    ("marker", "fix"),
    [
        ("since('1.x')", "*since('1.x'): give the Kubernetes version the test needs as 'MAJOR.MINOR'*"),
        ("since(135)", "*since(135): give the Kubernetes version*"),
        ("since()", "*since(): give the Kubernetes version*"),
        ("known_bug('kubernetes#127803')", "*pass one KnownBug defined in src/device_conformance/expectations/*"),
        ("known_bug(KnownBug('x#1', 'made up here', '1.30.0'))", "*pass one KnownBug defined in src/device*"),
        ("scenario('XY1')", "*'XY1' is not in the scenario catalogue; name a scenario by its ID in src/device_*"),
        ("scenario('DP12')", "*'DP12' is not in the scenario catalogue (did you mean *'DP11'?)*"),
        ("scenario('DRA-E99')", "*'DRA-E99' is not in the scenario catalogue*`device-conformance scenarios` lists*"),
        ("scenario('§2.99')", "*'§2.99' is not in the scenario catalogue*"),
        ("scenario(6)", "*6 is not in the scenario catalogue*"),
        ("scenario()", "*scenario(): give the catalogue IDs as positional strings*"),
    ],
)
def test_malformed_marker_is_a_collection_error_naming_the_fix(pytester, marker, fix):
    source = f"""
import pytest
from device_conformance.expectations.behaviour import KnownBug

@pytest.mark.{marker}
def test_bad():
    pass

def test_good():
    pass
"""
    result = run(pytester, "1.37.1", source)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR collecting test_declared.py*", "*test_declared.py::test_bad: @pytest.mark." + fix]
    )


SCENARIOS = (
    "import pytest\n"
    + ROLLOUT_BUG
    + """
@pytest.mark.scenario("DP6")
def test_succeeded_pod():
    pass

@pytest.mark.scenario("DP11", "DM3")
@pytest.mark.known_bug(BUG)
def test_reboot():
    pass

@pytest.mark.since("1.35")
def test_plain():
    pass
"""
)


def test_collect_only_shows_scenarios_bugs_and_versions(pytester):
    result = run(pytester, FIXED, SCENARIOS, "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "device-conformance: scenarios, minimum versions and known bugs of the selected tests",
            "  DM3 * test_declared.py::test_reboot",
            "  DP6 * test_declared.py::test_succeeded_pod",
            "  DP11 * test_declared.py::test_reboot",
            "  known bug kubernetes#127803 * test_declared.py::test_reboot",
            "  since 1.35 * test_declared.py::test_plain",
        ]
    )


def test_scenarios_and_bugs_select_with_m_and_k(pytester):
    selected = run(pytester, FIXED, SCENARIOS, "--collect-only", "-q", "-m", "scenario(id='DM3')")
    selected.stdout.fnmatch_lines(["test_declared.py::test_reboot", "1/3 tests collected (2 deselected)*"])
    selected = run(pytester, FIXED, SCENARIOS, "--collect-only", "-q", "-m", "scenario")
    selected.stdout.fnmatch_lines(["2/3 tests collected (1 deselected)*"])
    selected = run(pytester, FIXED, SCENARIOS, "--collect-only", "-q", "-m", "known_bug(issue='kubernetes#127803')")
    selected.stdout.fnmatch_lines(["test_declared.py::test_reboot", "1/3 tests collected (2 deselected)*"])
    selected = run(pytester, FIXED, SCENARIOS, "--collect-only", "-q", "-k", "DP6")
    selected.stdout.fnmatch_lines(["test_declared.py::test_succeeded_pod", "1/3 tests collected (2 deselected)*"])


def test_junit_report_carries_them_as_properties(pytester):
    xml = pytester.path / "junit.xml"
    run(pytester, FIXED, SCENARIOS, f"--junitxml={xml}").assert_outcomes(passed=3)
    properties = {
        case.get("name"): [(p.get("name"), p.get("value")) for p in case.iter("property")]
        for case in ET.parse(xml).getroot().iter("testcase")
    }
    assert properties == {
        "test_succeeded_pod": [("scenario", "DP6")],
        "test_reboot": [("scenario", "DP11"), ("scenario", "DM3"), ("known_bug", "kubernetes#127803")],
        "test_plain": [("since", "1.35")],
    }


def test_run_summary_lists_each_scenario_with_its_outcome(pytester):
    result = run(pytester, AFFECTED, SCENARIOS)
    result.assert_outcomes(passed=2, failed=1)  # test_reboot passes on a version the bug affects: XPASS(strict)
    result.stdout.fnmatch_lines(
        [
            "*device-conformance: scenarios and known bugs*",
            "  DM3 * failed   test_declared.py::test_reboot",
            "  DP6 * passed   test_declared.py::test_succeeded_pod",
        ]
    )


def test_scenario_alone_needs_no_cluster_version(pytester):
    """Only since/known_bug ask for kube_version (and so for a cluster) at setup."""
    pytester.makeconftest(
        """
import pytest

@pytest.fixture(scope="session")
def kube_version():
    raise AssertionError("kube_version must not be needed")
"""
    )
    pytester.makepyfile(test_declared="import pytest\n\n@pytest.mark.scenario('DF5')\ndef test_x():\n    pass\n")
    pytester.runpytest("--strict-markers", "-p", "no:cacheprovider").assert_outcomes(passed=1)


CATALOGUE_TAGS = """
import pytest

@pytest.mark.scenario("DRA-E7", "DT-U3")
def test_numbered_here():
    pass

@pytest.mark.scenario("§2.6")
def test_single_scenario_section():
    pass

@pytest.mark.scenario("§2.8")
def test_section_of_many():
    pass
"""


def test_catalogue_ids_and_sections_are_accepted_selected_and_shown(pytester):
    """IDs numbered here (with a hyphen) select like upstream ones; a catalogue section is accepted as written."""
    result = run(pytester, FIXED, CATALOGUE_TAGS, "--collect-only", "-q")
    result.stdout.fnmatch_lines(["  DRA-E7 * test_declared.py::test_numbered_here", "  §2.6 * test_declared.py::*"])
    selected = run(pytester, FIXED, CATALOGUE_TAGS, "--collect-only", "-q", "-m", "scenario(id='DT-U3')")
    selected.stdout.fnmatch_lines(["test_declared.py::test_numbered_here", "1/3 tests collected (2 deselected)*"])
    selected = run(pytester, FIXED, CATALOGUE_TAGS, "--collect-only", "-q", "-k", "DRA-E7")
    selected.stdout.fnmatch_lines(["test_declared.py::test_numbered_here", "1/3 tests collected (2 deselected)*"])


def test_declared_json_reports_what_each_collected_test_declares(pytester):
    """--declared-json: the file `device-conformance scenarios` reads; after -m/-k, tests without markers too."""
    report = pytester.path / "declared.json"
    run(pytester, FIXED, SCENARIOS, "--collect-only", "-q", f"--declared-json={report}", "-k", "not plain")
    assert json.loads(report.read_text()) == {
        "tests": [
            {"nodeid": "test_declared.py::test_succeeded_pod", "scenarios": ["DP6"], "since": [], "known_bugs": []},
            {
                "nodeid": "test_declared.py::test_reboot",
                "scenarios": ["DP11", "DM3"],
                "since": [],
                "known_bugs": ["kubernetes#127803"],
            },
        ]
    }
    source = "import pytest\n\n@pytest.mark.since('1.35', 'why')\ndef test_x():\n    pass\n"
    run(pytester, FIXED, source, "--collect-only", f"--declared-json={report}")
    assert json.loads(report.read_text())["tests"] == [
        {
            "nodeid": "test_declared.py::test_x",
            "scenarios": [],
            "since": [{"version": "1.35", "reason": "why"}],
            "known_bugs": [],
        }
    ]
