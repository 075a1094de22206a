"""Tests that run only when asked for: `make e2e` is the conformance suites, not the suites about our own tools.

The `vendor_patterns` tests (suites/vendor_mode) each run a whole nested vendor-mode session of our fakes, up to
half an hour apiece; they check the vendor mode itself, not a kubelet. They are deselected unless the run asks
for them: a `-m` expression naming the marker (`-m vendor_patterns`), or a path or node ID inside their folder
(`pytest suites/vendor_mode`). The deselection is said once in the terminal summary.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# marker -> (the folder whose paths ask for it, why it is not run by default)
OPT_IN = {
    "vendor_patterns": (
        "suites/vendor_mode",
        "nested vendor-mode runs of our fakes, up to half an hour each: `-m vendor_patterns` or "
        "`pytest suites/vendor_mode` runs them",
    ),
}
DESELECTED = pytest.StashKey[dict[str, int]]()


def asked_for(marker: str, folder: str, markexpr: str, args: list[str], rootpath: Path) -> bool:
    """Whether the run names the marker in its -m expression or selects a path inside `folder`."""
    if marker in markexpr:
        return True
    inside = (rootpath / folder).resolve()
    for arg in args:
        path = Path(arg.split("::", 1)[0])
        path = (path if path.is_absolute() else Path.cwd() / path).resolve()
        if path == inside or inside in path.parents:
            return True
    return False


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    markexpr = config.getoption("markexpr", "") or ""
    counts: dict[str, int] = {}
    for marker, (folder, _) in OPT_IN.items():
        if asked_for(marker, folder, markexpr, list(config.args), config.rootpath):
            continue
        dropped = [item for item in items if item.get_closest_marker(marker) is not None]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item in items if item.get_closest_marker(marker) is None]
            counts[marker] = len(dropped)
    config.stash[DESELECTED] = counts


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    for marker, count in config.stash.get(DESELECTED, {}).items():
        terminalreporter.write_line(f"not run: {count} `{marker}` test(s), {OPT_IN[marker][1]}")
