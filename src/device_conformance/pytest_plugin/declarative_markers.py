"""The declarative markers: which upstream scenarios a test covers, which version it needs, which known
bug it shows.

    @pytest.mark.scenario("DP6")           # one or more IDs of the catalogue in expectations/scenarios.py
    @pytest.mark.since("1.35", "effect None for device taints (kubernetes#134152)")
    @pytest.mark.known_bug(SUCCEEDED_POD_READMITTED)   # a KnownBug defined in device_conformance.expectations

A scenario tag must be in the catalogue (expectations/scenarios.py): an ID, or a section `§2.N`, which counts
for that section's scenario only where it has just one (scenarios.named_by). At collection every test's
markers are checked (a malformed one or an unknown ID is a collection error of its module that names the
fix) and recorded: a user property per entry (JUnit <properties>), a `scenario(id=...)`,
`since(version=...)` or `known_bug(issue=...)` mark per entry for `-m`, the scenario IDs as `-k` keywords,
and a summary under --collect-only. The version-dependent effect waits for test setup, against the
version actually under test (the `kube_version` fixture: with the local provider it is known only once the
cluster is up): `since` skips naming the version the test needs, `known_bug` makes the test a strict xfail
on the versions the bug affects (not strict on a component built from a patched source tree, whose patch may
fix the bug: expectations.behaviour.expected_failure).
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
import re
from collections.abc import Generator, Iterable
from dataclasses import dataclass

import pytest

from device_conformance import expectations
from device_conformance.expectations import scenarios as catalogue
from device_conformance.expectations.behaviour import ClusterVersions, KnownBug, expected_failure
from device_conformance.expectations.versions import KubeVersion
from device_conformance.pytest_plugin.known_bug_blocks import uses_blocks
from device_conformance.pytest_plugin.options import known_bugs_ignored

_MINIMUM = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?$")


@dataclass(frozen=True)
class MinimumVersion:
    """The oldest Kubernetes version a test holds for: MAJOR.MINOR (any patch) or MAJOR.MINOR.PATCH."""

    major: int
    minor: int
    patch: int | None = None
    reason: str = ""

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}" + ("" if self.patch is None else f".{self.patch}")

    def met_by(self, version: KubeVersion) -> bool:
        return (version.major, version.minor, version.patch) >= (self.major, self.minor, self.patch or 0)

    def skip_reason(self, version: KubeVersion) -> str:
        why = f" ({self.reason})" if self.reason else ""
        return f"needs Kubernetes {self}{why}; the cluster under test runs {version}"


@dataclass(frozen=True)
class Declared:
    """What a test's markers declare."""

    scenarios: tuple[str, ...] = ()
    since: tuple[MinimumVersion, ...] = ()
    bugs: tuple[KnownBug, ...] = ()

    @property
    def version_dependent(self) -> bool:
        return bool(self.since or self.bugs)


DECLARED = pytest.StashKey[Declared]()


class MarkerError(Exception):
    """A declarative marker a test cannot run with; the message names the fix."""


# -- parsing (collection) -----------------------------------------------------------------------------


def known_bugs() -> list[KnownBug]:
    """Every KnownBug defined at module level in device_conformance.expectations."""
    found: list[KnownBug] = []
    for module in pkgutil.iter_modules(expectations.__path__, f"{expectations.__name__}."):
        for value in vars(importlib.import_module(module.name)).values():
            if isinstance(value, KnownBug) and value not in found:
                found.append(value)
    return found


def _scenarios(marks: Iterable[pytest.Mark]) -> tuple[str, ...]:
    ids: list[str] = []
    for mark in marks:
        if mark.kwargs or not mark.args:
            raise MarkerError(
                f"scenario{_shown(mark)}: give the catalogue IDs as positional strings, e.g. scenario('DP6', 'DM3')"
            )
        for scenario in mark.args:
            if not isinstance(scenario, str) or not catalogue.is_known(scenario):
                raise MarkerError(f"scenario{_shown(mark)}: {_unknown(scenario)}")
            if scenario not in ids:
                ids.append(scenario)
    return tuple(ids)


def _unknown(scenario: object) -> str:
    close = difflib.get_close_matches(str(scenario), catalogue.BY_ID, n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
    return (
        f"{scenario!r} is not in the scenario catalogue{hint}; name a scenario by its ID in "
        "src/device_conformance/expectations/scenarios.py (e.g. 'DP6', 'DRA-E7'; `device-conformance scenarios` "
        "lists them all), or add the scenario there if upstream has it and the catalogue does not"
    )


def _minimum(mark: pytest.Mark) -> MinimumVersion:
    args, kwargs = list(mark.args), dict(mark.kwargs)
    reason = kwargs.pop("reason", "")
    if len(args) == 2 and not reason:
        reason = args.pop()
    match = _MINIMUM.match(args[0]) if len(args) == 1 and isinstance(args[0], str) else None
    if match is None or kwargs or not isinstance(reason, str):
        raise MarkerError(
            f"since{_shown(mark)}: give the Kubernetes version the test needs as 'MAJOR.MINOR' (or "
            "'MAJOR.MINOR.PATCH') and optionally what that version brings, e.g. "
            "since('1.35', 'effect None for device taints (kubernetes#134152)')"
        )
    major, minor, patch = match.groups()
    return MinimumVersion(int(major), int(minor), None if patch is None else int(patch), reason)


def _bug(mark: pytest.Mark, registered: list[KnownBug]) -> KnownBug:
    bug = mark.args[0] if len(mark.args) == 1 and not mark.kwargs else None
    if not isinstance(bug, KnownBug) or bug not in registered:
        raise MarkerError(
            f"known_bug{_shown(mark)}: pass one KnownBug defined in src/device_conformance/expectations/ "
            "(e.g. known_bug(SUCCEEDED_POD_READMITTED) from device_conformance.expectations.deviceplugin); "
            "a bug the test shows is data there, with its issue, the versions it affects and its fix"
        )
    return bug


def _shown(mark: pytest.Mark) -> str:
    parts = [repr(a) for a in mark.args] + [f"{k}={v!r}" for k, v in mark.kwargs.items()]
    return f"({', '.join(parts)})"


def declared(item: pytest.Item) -> Declared:
    """Parse the declarative markers of a test (its own, its class's and its module's)."""
    scenarios = _scenarios(item.iter_markers("scenario"))
    since = tuple(_minimum(mark) for mark in item.iter_markers("since"))
    bug_marks = list(item.iter_markers("known_bug"))
    registered = known_bugs() if bug_marks else []
    bugs = tuple(dict.fromkeys(_bug(mark, registered) for mark in bug_marks))
    return Declared(scenarios, since, bugs)


def record(item: pytest.Item, found: Declared) -> None:
    """Make the declaration visible: stash, user properties (JUnit), `-m` marks, `-k` keywords."""
    item.stash[DECLARED] = found
    for scenario in found.scenarios:
        item.user_properties.append(("scenario", scenario))
        item.add_marker(pytest.mark.scenario(id=scenario))
        item.extra_keyword_matches.add(scenario)
    for minimum in found.since:
        item.user_properties.append(("since", str(minimum)))
        item.add_marker(pytest.mark.since(version=str(minimum)))
    for bug in found.bugs:
        item.user_properties.append(("known_bug", bug.issue))
        item.add_marker(pytest.mark.known_bug(issue=bug.issue))


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(
    collector: pytest.Module | pytest.Class, name: str, obj: object
) -> Generator[None, object, object]:
    """Check and record each test as its module collects it, so a bad marker is that module's error."""
    result = yield
    made = result if isinstance(result, list) else [result]
    problems = []
    for item in made:
        if isinstance(item, pytest.Function):
            try:
                record(item, declared(item))
            except MarkerError as problem:
                problems.append(f"{item.nodeid}: @pytest.mark.{problem}")
    if problems:
        raise collector.CollectError("\n".join(problems))
    return result


# -- effect (setup) -----------------------------------------------------------------------------------


def known_bug_marker(bug: KnownBug, version: KubeVersion | ClusterVersions) -> pytest.MarkDecorator | None:
    """A strict xfail for versions the bug affects (None otherwise): never weaken the test instead. On a
    component built from a patched source tree the xfail is not strict (expectations.behaviour.expected_failure)."""
    versions = version if isinstance(version, ClusterVersions) else ClusterVersions(version, version)
    expected = expected_failure(bug, versions)
    if expected is None:
        return None
    return pytest.mark.xfail(strict=expected.strict, reason=expected.reason)


def apply_known_bug(item: pytest.Item, bug: KnownBug, versions: ClusterVersions) -> bool:
    """Mark `item` an xfail if `bug` affects the release of its component; returns whether it does."""
    marker = known_bug_marker(bug, versions)
    if marker is not None:
        item.add_marker(marker)
    return marker is not None


def apply(item: pytest.Item, found: Declared, versions: ClusterVersions) -> None:
    """The version-dependent effect: skip below a `since` (the kubelet's release), strict xfail where a known
    bug applies (judged on the release of the component it lives in)."""
    version = versions.kubelet
    for minimum in found.since:
        if not minimum.met_by(version):
            pytest.skip(minimum.skip_reason(version))
    if uses_blocks(item) or known_bugs_ignored(item.config):
        return  # known-bug blocks mark only their own checks; --ignore-known-bugs: the raw outcome
    for bug in found.bugs:
        apply_known_bug(item, bug, versions)


@pytest.fixture(autouse=True)
def _declared_versions(request: pytest.FixtureRequest) -> None:
    """Applies since/known_bug at setup; asks for the version (and so a cluster) only when they are there."""
    found = request.node.stash.get(DECLARED, None)
    if found is not None and found.version_dependent:
        apply(request.node, found, request.getfixturevalue("cluster_versions"))


# -- reports ------------------------------------------------------------------------------------------


def _labels(properties: Iterable[tuple[str, object]]) -> list[str]:
    labels = []
    for key, value in properties:
        if key == "scenario":
            labels.append(str(value))
        elif key == "known_bug":
            labels.append(f"known bug {value}")
        elif key == "since":
            labels.append(f"since {value}")
    return labels


def _natural(label: str) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)]


def _table(rows: Iterable[tuple[str, str]]) -> list[str]:
    ordered = sorted(rows, key=lambda row: (_natural(row[0]), row[1]))
    width = max((len(label) for label, _ in ordered), default=0)
    return [f"  {label:<{width}}  {text}" for label, text in ordered]


def pytest_report_collectionfinish(config: pytest.Config, items: list[pytest.Item]) -> list[str]:
    """Under --collect-only: which scenario, minimum version and known bug each selected test covers."""
    if not config.getoption("collectonly"):
        return []
    rows = [(label, item.nodeid) for item in items for label in _labels(item.user_properties)]
    if not rows:
        return []
    return ["device-conformance: scenarios, minimum versions and known bugs of the selected tests", *_table(rows)]


def _outcomes(stats: dict[str, list[object]]) -> dict[str, tuple[list[tuple[str, object]], str]]:
    """nodeid -> (user properties, outcome) of every declared test that ran (reports carry the properties,
    also from xdist workers): "error" if setup or teardown failed, else the call's category (passed,
    failed, xfailed, xpassed), else the setup's (skipped)."""
    phases: dict[str, dict[str, str]] = {}
    properties: dict[str, list[tuple[str, object]]] = {}
    for category, reports in stats.items():
        for report in reports:
            if isinstance(report, pytest.TestReport) and _labels(report.user_properties):
                phases.setdefault(report.nodeid, {})[report.when] = category
                properties[report.nodeid] = list(report.user_properties)
    found = {}
    for nodeid, seen in phases.items():
        failed_around = "error" in seen.values()
        found[nodeid] = (properties[nodeid], "error" if failed_around else seen.get("call") or seen.get("setup", ""))
    return found


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After a run: each declared scenario / known bug with the outcome of the tests that cover it."""
    outcomes = _outcomes(terminalreporter.stats)
    rows = [
        (label, f"{outcome:<8} {nodeid}")
        for nodeid, (properties, outcome) in outcomes.items()
        for label in _labels(properties)
    ]
    if rows:
        terminalreporter.write_sep("-", "device-conformance: scenarios and known bugs")
        for line in _table(rows):
            terminalreporter.write_line(line)
