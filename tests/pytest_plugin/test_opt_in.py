"""The vendor_patterns tests run only when asked for (pytest_plugin/opt_in.py)."""

from __future__ import annotations

pytest_plugins = ["pytester"]

PATTERNS = """
import pytest

@pytest.mark.vendor_patterns
def test_nested_run():
    pass
"""
PLAIN = """
def test_plain():
    pass
"""


def _tree(pytester):
    pytester.mkdir("suites")
    pytester.mkdir("suites/vendor_mode")
    pytester.mkdir("suites/smoke")
    (pytester.path / "suites/vendor_mode/test_nested.py").write_text(PATTERNS)
    (pytester.path / "suites/smoke/test_plain.py").write_text(PLAIN)


def test_a_run_of_every_suite_leaves_them_out_and_says_so_once(pytester):
    _tree(pytester)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["not run: 1 `vendor_patterns` test(s), nested vendor-mode runs of our fakes*"])


def test_a_marker_expression_naming_them_runs_them(pytester):
    _tree(pytester)
    pytester.runpytest("suites", "-m", "vendor_patterns", "-p", "no:cacheprovider").assert_outcomes(
        passed=1, deselected=1
    )
    result = pytester.runpytest("suites", "-m", "vendor_patterns or not vendor_patterns", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_their_folder_or_a_node_id_in_it_runs_them(pytester):
    _tree(pytester)
    pytester.runpytest("suites/vendor_mode", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    node = "suites/vendor_mode/test_nested.py::test_nested_run"
    pytester.runpytest(node, "-p", "no:cacheprovider").assert_outcomes(passed=1)
