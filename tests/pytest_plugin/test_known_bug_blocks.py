"""Known-bug blocks: only the check where the bug shows is the expected failure (pytester runs)."""

import pytest
from declared_runs import AFFECTED, FIXED, ROLLOUT_BUG, run
from declared_runs import rollout_bug_module as module

pytest_plugins = ["pytester"]


SHOWS = module("""    with shows_known_bug(BUG):
        assert False, "allocatable 0 after the old instance went away"
    print("recovery checked")
""")


def test_the_bug_showing_on_an_affected_release_is_an_xfail_naming_it_and_what_was_seen(pytester):
    result = run(pytester, AFFECTED, SHOWS, "-s")
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(
        ["*recovery checked*", "*known upstream bug kubernetes#127803*the check saw: allocatable 0 after the old*"]
    )


def test_the_same_check_failing_on_a_fixed_release_is_a_failure(pytester):
    run(pytester, FIXED, SHOWS).assert_outcomes(failed=1)


def test_a_failure_outside_the_block_fails_even_where_the_bug_shows(pytester):
    source = module("""    with shows_known_bug(BUG):
        assert False, "the bug"
    assert False, "the recovery half broke"
""")
    result = run(pytester, AFFECTED, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the recovery half broke*", "*known bugs that also showed*"])


def test_a_precondition_failing_before_the_block_is_a_failure_not_the_bug(pytester):
    source = module("""    raise RuntimeError("the cluster did not come up")
    with shows_known_bug(BUG):
        assert False
""")
    run(pytester, AFFECTED, source).assert_outcomes(failed=1)


def test_the_block_passing_on_an_affected_release_is_a_strict_failure_asking_for_the_data(pytester):
    source = module("""    with shows_known_bug(BUG):
        pass
""")
    result = run(pytester, AFFECTED, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*XPASS(strict)*kubernetes#127803 did not show on Kubernetes 1.35.4*record it*"])


def test_a_declared_bug_never_checked_in_a_block_fails(pytester):
    source = module("""    pass
""")
    result = run(pytester, AFFECTED, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*never checked in a shows_known_bug block*kubernetes#127803*"])


def test_a_block_for_an_undeclared_bug_is_a_usage_error(pytester):
    source = f"""
import pytest
{ROLLOUT_BUG}
def test_x(shows_known_bug):
    with shows_known_bug(BUG):
        pass
"""
    result = run(pytester, FIXED, source)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*declare it on the test too, @pytest.mark.known_bug(kubernetes#127803)*"])


@pytest.mark.parametrize("version", [AFFECTED, FIXED])
def test_wait_timeouts_count_as_the_check_failing(pytester, version):
    source = module("""    from device_conformance.wait.core import until, Pending
    with shows_known_bug(BUG):
        until(lambda: Pending("still 0/2"), what="allocatable 2", timeout=0.3)
""")
    outcome = {"xfailed": 1} if version == AFFECTED else {"failed": 1}
    run(pytester, version, source).assert_outcomes(**outcome)


def test_ignore_known_bugs_turns_the_blocks_check_into_a_plain_failure(pytester):
    """--ignore-known-bugs (bisect): the raw outcome, whatever the data says about the release."""
    result = run(pytester, AFFECTED, SHOWS, "--ignore-known-bugs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*allocatable 0 after the old instance went away*"])


def test_ignore_known_bugs_passes_a_fixed_behaviour_the_data_calls_affected(pytester):
    source = module("""    with shows_known_bug(BUG):
        pass
""")
    run(pytester, AFFECTED, source, "--ignore-known-bugs").assert_outcomes(passed=1)


def test_ignore_known_bugs_drops_the_whole_test_xfail_of_a_marker(pytester):
    source = f"""
import pytest
{ROLLOUT_BUG}
@pytest.mark.known_bug(BUG)
def test_x():
    assert False, "the bug"
"""
    run(pytester, AFFECTED, source).assert_outcomes(xfailed=1)
    run(pytester, AFFECTED, source, "--ignore-known-bugs").assert_outcomes(failed=1)
