"""Known-bug blocks: the check where a known upstream bug shows, and only that check, is the expected failure.

    @pytest.mark.known_bug(EXTENDED_RESOURCES_NOT_RESET)          # declared: recorded at collection
    def test_missing_checkpoint_resets_the_extended_resource(..., shows_known_bug):
        ...                                                     # preconditions: any failure fails the test
        with shows_known_bug(EXTENDED_RESOURCES_NOT_RESET):
            resource.wait_counts(0, 0, timeout=...)             # the bug's own check
        ...                                                     # recovery: still checked on affected releases

On a release the bug affects, an AssertionError or WaitTimeout inside the block is recorded and the test goes
on; if everything else passes the test is reported as xfailed, naming the bug, its fix and what the check saw.
If the block passes there, the test fails (strict): the fix reached that release and the data must say so;
except on a component built from a patched source tree (K8S_SOURCE, a release plus local changes), where the
patch may be the fix: the test is reported XPASS, "patched tree: the known bug ... may be fixed by the patch". On
other releases the block is transparent. A test that uses the fixture gets no whole-test xfail from its
`known_bug` markers (declarative_markers.py); each declared bug must be checked in a block or the test fails.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

import pytest

from device_conformance.core.errors import WaitTimeout
from device_conformance.expectations.behaviour import ClusterVersions, KnownBug, expected_failure
from device_conformance.pytest_plugin.options import known_bugs_ignored

FIXTURE = "shows_known_bug"


@dataclass
class BlockResults:
    versions: ClusterVersions
    declared: tuple[KnownBug, ...]
    shown: list[str] = field(default_factory=list)  # reasons: bug + what the check saw
    not_shown: list[KnownBug] = field(default_factory=list)
    checked: set[str] = field(default_factory=set)  # issues whose block ran


BLOCKS = pytest.StashKey[BlockResults]()


def uses_blocks(item: pytest.Item) -> bool:
    return FIXTURE in getattr(item, "fixturenames", ())


@pytest.fixture
def shows_known_bug(
    request: pytest.FixtureRequest, cluster_versions: ClusterVersions
) -> Callable[[KnownBug], AbstractContextManager[None]]:
    """shows_known_bug(BUG) -> a context manager around the one check where BUG shows (see module doc)."""
    declared = tuple(
        mark.args[0]
        for mark in request.node.iter_markers("known_bug")
        if mark.args and isinstance(mark.args[0], KnownBug)
    )
    ignored = known_bugs_ignored(request.config)
    results = BlockResults(cluster_versions, () if ignored else declared)
    request.node.stash[BLOCKS] = results

    @contextmanager
    def block(bug: KnownBug) -> Iterator[None]:
        if bug not in declared:
            raise pytest.UsageError(
                f"shows_known_bug({bug.issue}): declare it on the test too, @pytest.mark.known_bug({bug.issue})"
            )
        results.checked.add(bug.issue)
        version = bug.judged_on(cluster_versions)
        if ignored or not bug.affects(version):
            yield
            return
        try:
            yield
        except (AssertionError, WaitTimeout) as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            results.shown.append(f"{bug.describe(version)}; the check saw: {first_line}")
        else:
            results.not_shown.append(bug)

    return block


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    report = yield
    results = item.stash.get(BLOCKS, None)
    if call.when != "call" or results is None or not isinstance(report, pytest.TestReport):
        return report
    versions = results.versions
    affecting = [bug for bug in results.declared if bug.affects(bug.judged_on(versions))]
    unchecked = [bug.issue for bug in affecting if bug.issue not in results.checked]
    # A component built from a patched tree may carry the fix: a bug not shown there is no contradiction of the data.
    patched = [bug for bug in results.not_shown if versions.patched_component(bug.component)]
    strict = [bug for bug in results.not_shown if bug not in patched]
    if report.passed:
        if strict:
            report.outcome = "failed"
            report.longrepr = "[XPASS(strict)] " + "; ".join(
                f"known bug {bug.issue} did not show on Kubernetes {bug.judged_on(versions)} ({bug.component}), which "
                f"the data says it affects ({bug.describe_fix(bug.judged_on(versions))}): if the fix reached this "
                "release, record it in expectations/"
                for bug in strict
            )
        elif unchecked:
            report.outcome = "failed"
            report.longrepr = f"known bugs declared but never checked in a shows_known_bug block: {unchecked}"
        elif results.shown:
            report.outcome = "skipped"
            report.wasxfail = " | ".join(results.shown)
        elif patched:  # passed, reported XPASS with the reason
            report.wasxfail = " | ".join(_did_not_show(bug, versions) for bug in patched)
        if patched and results.shown:
            report.sections.append(
                ("known bugs the patch may fix", "\n".join(_did_not_show(b, versions) for b in patched))
            )
    elif report.failed and results.shown:
        report.sections.append(("known bugs that also showed", "\n".join(results.shown)))
    return report


def _did_not_show(bug: KnownBug, versions: ClusterVersions) -> str:
    expected = expected_failure(bug, versions)
    reason = expected.reason if expected else bug.describe(bug.judged_on(versions))
    return f"{reason}; its check passed"
