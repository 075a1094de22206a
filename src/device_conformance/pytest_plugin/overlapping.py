"""Scenario fixtures whose windows overlap: `pytest.mark.overlapping("first", "second", ...)` on a module.

Several kubelet behaviours can only be judged by watching for minutes (the endpoint stop grace period, a
"nothing happened" window after a restart). A module with several such scenarios gives each its own
module-scoped fixture, named after it, and lists them in the marker: they all start before the module's
first test, in the order named (one that restarts the kubelet goes first, so its restart disturbs none of
the others), and each test then waits only for what is left of its own window. The module waits once, not
once per scenario, and no test has to sit at a particular place in the file.

Only the fixtures that a selected test of the module asks for start (`-k killed` starts one), and not
those of tests whose `since` marker skips them on the release under test.
"""

from __future__ import annotations

import pytest

from device_conformance.pytest_plugin.declarative_markers import DECLARED

MARKER = "overlapping"


def _will_run(item: pytest.Item, request: pytest.FixtureRequest) -> bool:
    """False for a test its `since` marker skips on the kubelet under test (applied later, at its setup)."""
    found = item.stash.get(DECLARED, None)
    if found is None or not found.since:
        return True
    kubelet = request.getfixturevalue("cluster_versions").kubelet
    return all(minimum.met_by(kubelet) for minimum in found.since)


def started_in_order(named: tuple[str, ...], items: list[pytest.Item], request: pytest.FixtureRequest) -> list[str]:
    """The named fixtures that a test of this module which will run asks for, in the marker's order."""
    module = request.node
    asked: set[str] = set()
    for item in items:
        if item.getparent(pytest.Module) is module and _will_run(item, request):
            asked.update(getattr(item, "fixturenames", ()))
    return [name for name in named if name in asked]


def _named(module: pytest.Module) -> tuple[str, ...]:
    marker = module.get_closest_marker(MARKER)
    if marker is None:
        return ()
    names = tuple(marker.args)
    if not names or not all(isinstance(name, str) for name in names):
        raise pytest.UsageError(
            f"{module.nodeid}: @pytest.mark.{MARKER} takes the names of the module's scenario fixtures, in the "
            f"order they start, e.g. pytest.mark.{MARKER}('restarted', 'killed'); got {marker.args!r}"
        )
    return names


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A name in the marker that no test of the module asks for is a typo: its scenario would never start
    early, and the module would wait once per scenario again."""
    asked: dict[pytest.Module, set[str]] = {}
    for item in items:
        module = item.getparent(pytest.Module)
        if module is not None:
            asked.setdefault(module, set()).update(getattr(item, "fixturenames", ()))
    for module, names in asked.items():
        unused = [name for name in _named(module) if name not in names]
        if unused:
            raise pytest.UsageError(
                f"{module.nodeid}: @pytest.mark.{MARKER} names {', '.join(map(repr, unused))}, which no test of "
                "the module asks for; name the module-scoped scenario fixtures its tests take"
            )


@pytest.fixture(scope="module", autouse=True)
def _overlapping_scenarios(request: pytest.FixtureRequest) -> None:
    """Starts the module's `overlapping` scenario fixtures before its first test (autouse and module-scoped,
    so pytest sets it up before the test's own module fixtures)."""
    names = _named(request.node) if isinstance(request.node, pytest.Module) else ()
    for name in started_in_order(names, request.session.items, request):
        request.getfixturevalue(name)
