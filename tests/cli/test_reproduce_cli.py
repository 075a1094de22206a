"""`device-conformance reproduce`: which bug, which releases and which verdict (the runs themselves are e2e)."""

import pytest

from device_conformance.cli import reproduce
from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion

V = KubeVersion.parse

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="suites.taints.test_device_taints" name="test_toleration_seconds_delay_the_eviction">
  <skipped type="pytest.xfail" message="known upstream bug kubernetes#134434 on Kubernetes 1.34.10: ..."/>
</testcase></testsuite></testsuites>
"""


def test_bug_is_found_by_issue_or_number():
    assert reproduce.find_bug("kubernetes#134434").issue == "kubernetes#134434"
    assert reproduce.find_bug("134434").issue == "kubernetes#134434"
    with pytest.raises(BadInput, match="not a catalogued bug"):
        reproduce.find_bug("kubernetes#1")
    # a finding not reported upstream yet is found by its own name
    finding = "finding:podresources-repeats-earlier-cdi-ids"
    assert reproduce.find_bug(finding).issue == finding
    assert reproduce.pick_releases(reproduce.find_bug(finding), None, None) == (V("1.37.2"), None)


@pytest.mark.parametrize(
    ("issue", "affected", "fixed"),
    [
        ("kubernetes#134434", "1.34.12", "1.35.8"),  # fixed in 1.35.0, no cherry-pick
        ("kubernetes#135686", "1.35.8", "1.36.5"),  # fixed in 1.36.0
        ("kubernetes#127803", "1.36.5", "1.37.2"),  # fixed in 1.37.0
    ],
)
def test_default_releases_come_from_the_matrix(issue, affected, fixed):
    bad, good = reproduce.pick_releases(reproduce.find_bug(issue), None, None)
    assert (str(bad), str(good)) == (affected, fixed)


def test_given_releases_are_checked_against_the_data():
    bug = reproduce.find_bug("kubernetes#126341")  # cherry-picked to 1.31.1
    bad, good = reproduce.pick_releases(bug, "1.31.0", "1.31.1")
    assert (str(bad), str(good)) == ("1.31.0", "1.31.1")
    with pytest.raises(BadInput, match=r"does not affect 1\.31\.1"):
        reproduce.pick_releases(bug, "1.31.1", "1.32.0")
    with pytest.raises(BadInput, match=r"still affects 1\.30\.4"):
        reproduce.pick_releases(bug, "1.30.3", "1.30.4")


def test_the_bugs_own_xfail_is_reproduced(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    bug = reproduce.find_bug("kubernetes#134434")
    outcome = reproduce.read_outcome(junit, bug)
    assert outcome == reproduce.RunOutcome(xfailed_by_bug=1, passed=0, failed=0, other=0)
    assert reproduce.verdict(outcome, affected=True) == "reproduced"
    # The same xfail naming another bug is no reproduction of this one.
    other = reproduce.read_outcome(junit, reproduce.find_bug("kubernetes#135686"))
    assert reproduce.verdict(other, affected=True) == "not reproduced"


def test_verdicts_on_the_fixed_release():
    assert reproduce.verdict(reproduce.RunOutcome(0, 1, 0, 0), affected=False) == "fixed as expected"
    assert reproduce.verdict(reproduce.RunOutcome(0, 0, 1, 0), affected=False).startswith("failed")
    assert reproduce.verdict(reproduce.RunOutcome(0, 1, 0, 0), affected=True) == "not reproduced"


def test_a_skipped_tests_reason_is_read_from_the_junit_report(tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(
        '<testsuites><testsuite><testcase classname="c" name="t"><skipped type="pytest.skip" message="needs '
        'Kubernetes 1.36"/></testcase></testsuite></testsuites>'
    )
    outcome = reproduce.read_outcome(junit, reproduce.find_bug("kubernetes#140818"))
    assert outcome == reproduce.RunOutcome(0, 0, 0, 1, ("needs Kubernetes 1.36",))


def test_recorded_reproductions_agree_with_the_bug_data():
    from device_conformance.expectations.bugtable import REPRODUCED, render
    from device_conformance.expectations.versions import KubeVersion

    for issue, (affected, fixed, _date) in REPRODUCED.items():
        bug = reproduce.find_bug(issue)
        assert bug.affects(KubeVersion.parse(affected)), f"{issue} was reproduced on {affected}: the data must say so"
        if fixed:
            assert not bug.affects(KubeVersion.parse(fixed)), f"{issue} passed on {fixed}: the data must say fixed"
        elif bug.fixes:  # run before its fix was recorded: the table must say the fixed run is missing
            row = f"| {issue} | {affected} | not yet run: the fix ({bug.fix}) was recorded after this run |"
            assert row in render()


@pytest.mark.parametrize(
    ("issue", "bad", "good", "whole", "expected"),
    [
        ("kubernetes#127803", "1.36.4", "1.37.1", False, ("1.37.1", "1.36.4")),  # kubelet bug: only its kubelet
        ("kubernetes#127803", "1.36.4", "1.37.1", True, ("1.36.4", None)),  # --whole-cluster
        ("kubernetes#134434", "1.34.10", "1.35.8", False, ("1.34.10", None)),  # the eviction controller's bug
        ("kubernetes#127803", "1.33.13", "1.37.1", False, ("1.33.13", None)),  # four minors: outside the skew
    ],
)
def test_the_affected_run_swaps_only_a_kubelet_bugs_kubelet(issue, bad, good, whole, expected):
    control_plane, kubelet = reproduce.affected_run(reproduce.find_bug(issue), V(bad), V(good), whole)
    assert (str(control_plane), kubelet and str(kubelet)) == expected


def test_a_regression_with_no_fix_is_compared_with_the_newest_release_before_it():
    bug = reproduce.find_bug("kubernetes#135437")  # first affected 1.37.0, no fix released
    bad, good = reproduce.pick_releases(bug, None, None)
    assert (str(bad), str(good)) == ("1.37.2", "1.36.5")
    assert reproduce.before_the_bug(bug, good)
    # A kubelet bug: the older release runs as the kubelet under the affected release's control plane.
    assert reproduce.affected_run(bug, bad, good, False) == (V("1.37.2"), None)
    assert reproduce.comparison_run(bug, bad, good, False) == (V("1.37.2"), V("1.36.5"))
    assert reproduce.comparison_run(bug, bad, good, True) == (V("1.36.5"), None)
    # An unfixed bug older than every matrix release has nothing to compare with: the affected run alone.
    old = reproduce.find_bug("kubernetes#126943")  # since 1.15.0, no fix
    assert reproduce.pick_releases(old, None, None) == (V("1.37.2"), None)


def test_a_fixed_bug_is_still_compared_with_its_fixed_release():
    bug = reproduce.find_bug("kubernetes#127803")
    bad, good = reproduce.pick_releases(bug, None, None)
    assert not reproduce.before_the_bug(bug, good)
    assert reproduce.comparison_run(bug, bad, good, False) == (V("1.37.2"), None)


def test_verdicts_on_the_release_before_a_regression():
    passed = reproduce.RunOutcome(0, 1, 0, 0)
    assert reproduce.verdict(passed, affected=False, before=True) == "not present before the regression"
    assert reproduce.verdict(reproduce.RunOutcome(0, 0, 0, 1), affected=False, before=True) == "not run"
    # A test the comparison release cannot run says why (the reason pytest gave).
    needs = "needs Kubernetes 1.36 (ResourceHealthStatus on by default (beta)); the cluster under test runs 1.35.8"
    skipped = reproduce.RunOutcome(0, 0, 0, 1, (needs,))
    assert reproduce.verdict(skipped, affected=False, before=True) == f"not run: skipped ({needs})"
    assert reproduce.verdict(reproduce.RunOutcome(0, 0, 1, 0), affected=False, before=True).startswith("failed")
