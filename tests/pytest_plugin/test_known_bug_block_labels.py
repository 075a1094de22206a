"""Known-bug blocks name their check: every report that judges a block says which one, by its `what=` label or
the file:line that opened it; every block of a bug must show it on an affected release (pytester runs)."""

import pytest
from declared_runs import AFFECTED, run
from declared_runs import rollout_bug_module as module

pytest_plugins = ["pytester"]


def where(pytester, marker, module_path="test_declared.py"):
    """'<module_path>:N', N the line of that written test module which holds `marker`."""
    lines = (pytester.path / module_path).read_text().splitlines()
    (number,) = [n for n, line in enumerate(lines, start=1) if marker in line]
    return f"{module_path}:{number}"


TWO_BLOCKS = """    with shows_known_bug(BUG):  # first block
        assert False, "{first}"
    with shows_known_bug(BUG):  # second block
        assert {second_passes}, "{second}"
"""


def test_every_block_that_showed_the_bug_is_named_in_the_xfail_reason_with_what_it_saw(pytester):
    body = TWO_BLOCKS.format(first="allocatable 0", second_passes=False, second="still 0 after registration")
    result = run(pytester, AFFECTED, module(body))
    result.assert_outcomes(xfailed=1)
    first, second = where(pytester, "# first block"), where(pytester, "# second block")
    result.stdout.fnmatch_lines(
        [
            f"XFAIL*known upstream bug kubernetes#127803*; showed in: {first} (the check saw: allocatable 0); "
            f"{second} (the check saw: still 0 after registration)*"
        ]
    )


def test_a_block_that_did_not_show_where_another_did_fails_strict_naming_each_block(pytester):
    """The mistake this catches: a block around checks an affected release passes (it can never show the bug)."""
    body = TWO_BLOCKS.format(first="allocatable 0", second_passes=True, second="")
    result = run(pytester, AFFECTED, module(body))
    result.assert_outcomes(failed=1)
    first, second = where(pytester, "# first block"), where(pytester, "# second block")
    result.stdout.fnmatch_lines(
        [
            "*[[]XPASS(strict)[]] known bug kubernetes#127803 did not show on Kubernetes 1.35.4*record it*"
            f"did not show in: {second} (its check passed)*showed in: {first} (the check saw: allocatable 0)*"
        ]
    )


def test_what_names_the_check_with_the_place_that_opened_the_block(pytester):
    body = """    with shows_known_bug(BUG, what="the reset of allocatable"):  # the block
        assert False, "allocatable 2"
"""
    result = run(pytester, AFFECTED, module(body))
    result.assert_outcomes(xfailed=1)
    label = f"the reset of allocatable ({where(pytester, '# the block')})"
    result.stdout.fnmatch_lines([f"XFAIL*showed in: {label} (the check saw: allocatable 2)*"])


def test_a_block_made_in_one_place_and_entered_in_another_is_named_where_it_was_made(pytester):
    body = """    block = shows_known_bug(BUG)  # made here
    check_inside(block)


def check_inside(block):
    with block:
        pass
"""
    result = run(pytester, AFFECTED, module(body))
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*XPASS(strict)*did not show in: {where(pytester, '# made here')} (its check*"])


def test_a_failure_elsewhere_reports_the_blocks_that_showed_and_did_not_by_name(pytester):
    body = """    with shows_known_bug(BUG):  # showed
        assert False, "allocatable 0"
    with shows_known_bug(BUG):  # did not show
        pass
    assert False, "the recovery half broke"
"""
    result = run(pytester, AFFECTED, module(body))
    result.assert_outcomes(failed=1)
    showed, passed = where(pytester, "# showed"), where(pytester, "# did not show")
    result.stdout.fnmatch_lines(
        [
            "*the recovery half broke*",
            "*known bugs that also showed*",
            f"*kubernetes#127803*showed in: {showed} (the check saw: allocatable 0)*",
            "*known bugs that did not show*",
            f"*kubernetes#127803*did not show in: {passed} (its check passed)*",
        ]
    )


PATCHED_TREE = """
import pytest
from device_conformance.expectations.behaviour import COMPONENTS, ClusterVersions
from device_conformance.expectations.versions import KubeVersion

@pytest.fixture(scope="session")
def cluster_versions():
    release = KubeVersion.parse({version!r})
    return ClusterVersions(release, release, "a local change", frozenset(COMPONENTS))
"""


@pytest.mark.parametrize("second_passes", [False, True])
def test_on_a_patched_tree_the_blocks_the_patch_may_have_fixed_are_named_beside_those_that_showed(
    pytester, second_passes
):
    body = TWO_BLOCKS.format(first="allocatable 0", second_passes=second_passes, second="still 0")
    pytester.makeconftest(PATCHED_TREE.format(version=AFFECTED))
    pytester.makepyfile(test_declared=module(body))
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider", "-rsxX")
    result.assert_outcomes(xfailed=1)
    first, second = where(pytester, "# first block"), where(pytester, "# second block")
    if second_passes:
        result.stdout.fnmatch_lines(
            [f"XFAIL*showed in: {first} (the check saw: allocatable 0); did not show in: {second} (its check passed)*"]
        )
    else:
        result.stdout.fnmatch_lines([f"XFAIL*showed in: {first} (*); {second} (the check saw: still 0)"])
        assert "did not show" not in result.stdout.str()


def test_the_label_is_the_path_from_the_rootdir(pytester):
    """Two suites may hold modules of the same name: the label names the folder too."""
    run(pytester, AFFECTED, "")  # the conftest fixing the release
    (pytester.path / "test_declared.py").unlink()
    folder = pytester.mkdir("dra")
    (folder / "test_reuse.py").write_text(
        module("""    with shows_known_bug(BUG):  # the block
        assert False, "allocatable 0"
""")
    )
    result = pytester.runpytest("--strict-markers", "-p", "no:cacheprovider", "-rsxX")
    result.assert_outcomes(xfailed=1)
    label = where(pytester, "# the block", "dra/test_reuse.py")
    result.stdout.fnmatch_lines([f"XFAIL*showed in: {label} (the check saw: allocatable 0)*"])


def test_a_bug_no_block_showed_is_not_called_a_mistake_of_the_test(pytester):
    """Where no block showed it, the fix reaching the release is the reading the message leads with."""
    body = TWO_BLOCKS.format(first="", second_passes=True, second="").replace("assert False", "assert True")
    result = run(pytester, AFFECTED, module(body))
    result.assert_outcomes(failed=1)
    first, second = where(pytester, "# first block"), where(pytester, "# second block")
    result.stdout.fnmatch_lines(
        [f"*XPASS(strict)*record it in expectations/. Its blocks: did not show in: {first} (its*); {second} (its*"]
    )
    assert "mistake of the test" not in result.stdout.str()
