"""pytest-xdist: tests on one node never run at the same time, and we check that this really holds.

Each worker normally brings up its own cluster (local, or kind named dc-<run>-<worker>), and a worker
runs its tests one after another, so no two tests ever share a node concurrently. When the workers
share one cluster (--provider existing / --kubeconfig, or --kind-cluster NAME), every test that uses
it is put in one xdist group, so one worker runs them all in turn (a kubelet restart in one test
would otherwise break the tests running beside it). That needs `--dist loadgroup`.

With a cluster per worker and `--dist loadgroup` (what `make e2e` passes), each module is one group:
its module-scoped fixtures (the background "nothing happens" windows of wait.core.watch, the
grace-period module's one shared wait) then run once, on one worker, while the other workers go on
with other modules, instead of once per worker that got some of its tests. Modules are handed out
longest first, by the measured times of their selected tests (suites/durations.json, suite_durations.py),
so the longest waits start at once rather than at the end of the run. A module with a test not measured
yet goes first (it may be long), ordered by a guess: slow tests, then a module-scoped fixture, then the
number of tests.

Grouping fails silently on pytest 9.2 + xdist 3.8 (pytest-dev/pytest-xdist#1386): the marks are
there but the `@group` suffix xdist needs is not. So at collection time, on each worker, every
grouped test's node id must end in its group; otherwise the run stops with the fix.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from device_conformance.core import suite_durations
from device_conformance.core.errors import BadInput
from device_conformance.fixtures.session import session_settings


def worker_count(config: pytest.Config) -> int:
    workerinput = getattr(config, "workerinput", None)
    return int(workerinput.get("workercount", 1)) if workerinput else 1


def shared_cluster(config: pytest.Config) -> str | None:
    """The name of a cluster every worker would use, or None when each worker makes its own."""
    try:
        settings = session_settings(config)
    except BadInput:
        return None  # unusable settings are reported when a test needs the cluster
    if not settings.capabilities.brings_up_clusters:
        return settings.provider.value
    if settings.capabilities.reuses_named_cluster and settings.kind_cluster.value:
        return f"{settings.provider.value}-{settings.kind_cluster.value}"
    return None


def group_name(mark: pytest.Mark) -> str:
    return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))


GROUPING_BROKEN = pytest.StashKey[str]()


def _shared_cluster_fix(shared: str, workers: str) -> BadInput:
    return BadInput(
        f"{workers} xdist workers would share the cluster '{shared}', and disruptive tests restart its kubelet "
        "under the others",
        "add --dist loadgroup (its tests then run on one worker, in turn), or let each worker create its own "
        "cluster (drop --kind-cluster / use --provider local|kind)",
    )


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    """On the xdist controller: a shared cluster needs --dist loadgroup (refused before any worker starts)."""
    if hasattr(config, "workerinput"):
        return
    workers = getattr(config.option, "numprocesses", None)
    dist = getattr(config.option, "dist", "no")
    shared = shared_cluster(config)
    if shared is not None and workers and dist not in ("no", "loadgroup"):
        raise pytest.UsageError(str(_shared_cluster_fix(shared, str(workers))))
    if dist == "loadgroup":
        # The scheduler (on the controller) would sort groups by their number of tests; the workers'
        # collection order below (longest first) is the better guess of how long a module runs.
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Before xdist's own hook (which appends @group to node ids): group tests of a shared cluster,
    or, with a cluster per worker, each module's tests, modules longest first."""
    if worker_count(config) < 2 or not config.getvalue("loadgroup"):
        return
    shared = shared_cluster(config)
    if shared is not None:
        for item in items:
            if "cluster" in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(name=f"cluster-{shared}"))
        return
    items[:] = longest_modules_first(items, suite_durations.load(config.rootpath))
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(name=module_of(item)))


def module_of(item: pytest.Item) -> str:
    """The test's module path (its node id up to the first '::'), the group name of its module."""
    return item.nodeid.split("::", 1)[0]


def has_module_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a module-scoped fixture of its own module (a background window, a shared wait)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    module = module_of(item)
    return any(
        fixturedef.scope == "module" and fixturedef.baseid.split("::", 1)[0] == module
        for fixturedefs in info.name2fixturedefs.values()
        for fixturedef in fixturedefs
    )


def longest_modules_first(items: list[pytest.Item], durations: Mapping[str, float]) -> list[pytest.Item]:
    """Modules ordered by how long they run: first those with a test not in `durations` (node id -> seconds), by
    a guess (slow tests, a module-scoped fixture, more tests), then the others by the sum of their tests' measured
    seconds. Tests keep their order inside a module, and equal modules their collection order (every worker
    must collect the same order)."""
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(module_of(item), []).append(item)

    def weight(tests: list[pytest.Item]) -> tuple[int, float, int, int, int]:
        if all(test.nodeid in durations for test in tests):
            return (0, sum(durations[test.nodeid] for test in tests), 0, 0, 0)
        slow = sum(1 for test in tests if test.get_closest_marker("slow") is not None)
        return (1, 0.0, slow, int(any(has_module_fixture(test) for test in tests)), len(tests))

    ordered = sorted(modules.values(), key=weight, reverse=True)
    return [item for tests in ordered for item in tests]


def ungrouped(items: list[pytest.Item]) -> list[str]:
    """Node ids of grouped tests that xdist did not actually group (no @group suffix)."""
    missing = []
    for item in items:
        names = sorted({group_name(mark) for mark in item.iter_markers("xdist_group")})
        if names and not item.nodeid.endswith("@" + "_".join(names)):
            missing.append(item.nodeid)
    return missing


def pytest_collection_finish(session: pytest.Session) -> None:
    """On workers with --dist loadgroup: if xdist's grouping is not in effect, no test may run."""
    config = session.config
    if worker_count(config) < 2 or not config.getvalue("loadgroup"):
        return
    missing = ungrouped(session.items)
    if missing:
        problem = BadInput(
            f"xdist grouping is not in effect: {len(missing)} tests marked xdist_group lack the @group node id "
            f"suffix (e.g. {missing[0]}), so --dist loadgroup would spread them over workers "
            f"(pytest {pytest.__version__}; pytest-dev/pytest-xdist#1386)",
            "install pytest<9.2 (this project pins it: pip install -e .), or run without -n",
        )
        config.stash[GROUPING_BROKEN] = str(problem)
        session.shouldstop = "xdist grouping is not in effect"


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    # A worker cannot end the run cleanly from collection (xdist reports an INTERNALERROR without the
    # message), so every test fails here, before any fixture brings up a cluster, saying why.
    problem = item.config.stash.get(GROUPING_BROKEN, None)
    if problem:
        pytest.fail(problem, pytrace=False)
