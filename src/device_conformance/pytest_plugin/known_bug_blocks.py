"""Known-bug blocks: the check where a known upstream bug shows, and only that check, is the expected failure.

    @pytest.mark.known_bug(EXTENDED_RESOURCES_NOT_RESET)          # declared: recorded at collection
    def test_missing_checkpoint_resets_the_extended_resource(..., shows_known_bug):
        ...                                                     # preconditions: any failure fails the test
        with shows_known_bug(EXTENDED_RESOURCES_NOT_RESET):
            resource.wait_counts(0, 0, timeout=...)             # the bug's own check
        ...                                                     # recovery: still checked on affected releases

On a release the bug affects, an AssertionError or WaitTimeout inside the block is recorded and the test goes
on; if everything else passes the test is reported as xfailed, naming the bug, its fix and, for each block, where
it is and what its check saw. If the block passes there, the test fails (strict): the fix reached that release and
the data must say so; except on a component built from a patched source tree (K8S_SOURCE, a release plus local
changes), where the patch may be the fix: the test is reported XPASS, "patched tree: the known bug ... may be fixed
by the patch". On other releases the block is transparent. A test that uses the fixture gets no whole-test xfail
from its `known_bug` markers (declarative_markers.py); each declared bug must be checked in a block or the test
fails.

Each block names its check: `shows_known_bug(BUG, what="the refusal")` labels it "the refusal (<file>:<line>)",
and without `what` the label is the file:line of the `shows_known_bug(...)` call (relative to the rootdir). Every
report that judges a block says which one: the xfail reason ("showed in: <label> (the check saw: ...)"), the
strict XPASS (each block of the bug, showed or not), and, on a test failing elsewhere, the sections "known bugs
that also showed" and "known bugs that did not show".

A bug may have several blocks in one test (the refusal, then the missing recovery): on an affected release EVERY
one of them must show it, or the test fails strict. A block that passes where another block of the same bug fails
is either the fix having reached the release in part, which the data must say, or a block around checks that an
affected release passes as well: a test mistake, since such a block can never be the expected failure and would
only excuse a regression in those checks as the known bug. The XPASS message lists each block by label with what
it saw, so the block that did not show is named. Only a patched tree relaxes this, block by block: the xfail
reason names the blocks that showed and those that did not ("did not show in: <label> (its check passed)"), and
the section "known bugs the patch may fix" repeats the latter.
"""

from __future__ import annotations

import inspect
from collections.abc import Generator, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pytest

from device_conformance.core.errors import WaitTimeout
from device_conformance.expectations.behaviour import ClusterVersions, KnownBug, expected_failure
from device_conformance.pytest_plugin.options import known_bugs_ignored

FIXTURE = "shows_known_bug"


class ShowsKnownBug(Protocol):
    """The fixture's value: shows_known_bug(BUG) or shows_known_bug(BUG, what="the refusal")."""

    def __call__(self, bug: KnownBug, what: str = "") -> AbstractContextManager[None]: ...


@dataclass(frozen=True)
class BlockOutcome:
    """One block run on a release its bug affects: its label and the first line of its check's failure
    (None: the check passed, the bug did not show there)."""

    bug: KnownBug
    label: str
    saw: str | None

    @property
    def showed(self) -> bool:
        return self.saw is not None

    def describe(self) -> str:
        return f"{self.label} (the check saw: {self.saw})" if self.showed else f"{self.label} (its check passed)"


@dataclass
class BlockResults:
    versions: ClusterVersions
    declared: tuple[KnownBug, ...]
    outcomes: list[BlockOutcome] = field(default_factory=list)  # blocks run on an affected release, in order
    checked: set[str] = field(default_factory=set)  # issues whose block ran

    def by_bug(self) -> dict[KnownBug, list[BlockOutcome]]:
        grouped: dict[KnownBug, list[BlockOutcome]] = {}
        for outcome in self.outcomes:
            grouped.setdefault(outcome.bug, []).append(outcome)
        return grouped

    def bugs_shown(self) -> dict[KnownBug, list[BlockOutcome]]:
        """The bugs that showed in at least one block, with all their blocks."""
        return {bug: blocks for bug, blocks in self.by_bug().items() if any(b.showed for b in blocks)}

    def bugs_not_shown(self) -> dict[KnownBug, list[BlockOutcome]]:
        """The bugs with at least one block that did not show them, with all their blocks."""
        return {bug: blocks for bug, blocks in self.by_bug().items() if not all(b.showed for b in blocks)}


BLOCKS = pytest.StashKey[BlockResults]()


def uses_blocks(item: pytest.Item) -> bool:
    return FIXTURE in getattr(item, "fixturenames", ())


@pytest.fixture
def shows_known_bug(request: pytest.FixtureRequest, cluster_versions: ClusterVersions) -> ShowsKnownBug:
    """shows_known_bug(BUG, what="") -> a context manager around one check where BUG shows (see module doc)."""
    declared = tuple(
        mark.args[0]
        for mark in request.node.iter_markers("known_bug")
        if mark.args and isinstance(mark.args[0], KnownBug)
    )
    ignored = known_bugs_ignored(request.config)
    results = BlockResults(cluster_versions, () if ignored else declared)
    request.node.stash[BLOCKS] = results
    rootpath = request.config.rootpath

    @contextmanager
    def block(bug: KnownBug, label: str) -> Iterator[None]:
        if bug not in declared:
            raise pytest.UsageError(
                f"shows_known_bug({bug.issue}): declare it on the test too, @pytest.mark.known_bug({bug.issue})"
            )
        results.checked.add(bug.issue)
        if ignored or not bug.affects(bug.judged_on(cluster_versions)):
            yield
            return
        try:
            yield
        except (AssertionError, WaitTimeout) as exc:
            first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            results.outcomes.append(BlockOutcome(bug, label, first_line))
        else:
            results.outcomes.append(BlockOutcome(bug, label, None))

    def labelled_block(bug: KnownBug, what: str = "") -> AbstractContextManager[None]:
        where = _caller(rootpath)
        return block(bug, f"{what} ({where})" if what else where)

    return labelled_block


def _caller(rootpath: Path) -> str:
    """file:line of the call to shows_known_bug(...): two frames up from here."""
    frame = inspect.currentframe()
    try:
        caller = frame.f_back.f_back if frame and frame.f_back else None
        if caller is None:
            return "an unknown place"
        path = Path(caller.f_code.co_filename)
        shown = path.relative_to(rootpath) if path.is_relative_to(rootpath) else path.name
        return f"{shown}:{caller.f_lineno}"
    finally:
        del frame  # a frame holds its locals: no reference cycle through this one


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, object, object]:
    report = yield
    results = item.stash.get(BLOCKS, None)
    if call.when != "call" or results is None or not isinstance(report, pytest.TestReport):
        return report
    if report.passed:
        _judge_passed(report, results)
    elif report.failed:
        _add_failure_sections(report, results)
    return report


def _judge_passed(report: pytest.TestReport, results: BlockResults) -> None:
    """A test whose every check outside the blocks passed: xfail, strict XPASS, XPASS of a patched tree or pass."""
    versions = results.versions
    affecting = [bug for bug in results.declared if bug.affects(bug.judged_on(versions))]
    unchecked = [bug.issue for bug in affecting if bug.issue not in results.checked]
    shown, not_shown = results.bugs_shown(), results.bugs_not_shown()
    # A component built from a patched tree may carry the fix: a bug not shown there is no contradiction of the data.
    patched = {bug: blocks for bug, blocks in not_shown.items() if versions.patched_component(bug.component)}
    strict = {bug: blocks for bug, blocks in not_shown.items() if bug not in patched}
    if strict:
        report.outcome = "failed"
        report.longrepr = "[XPASS(strict)] " + " | ".join(
            _strict_failure(bug, blocks, versions) for bug, blocks in strict.items()
        )
    elif unchecked:
        report.outcome = "failed"
        report.longrepr = f"known bugs declared but never checked in a shows_known_bug block: {unchecked}"
    elif shown:
        report.outcome = "skipped"
        report.wasxfail = " | ".join(_showed(bug, blocks, versions) for bug, blocks in shown.items())
    elif patched:  # passed, reported XPASS with the reason
        report.wasxfail = " | ".join(_did_not_show(bug, blocks, versions) for bug, blocks in patched.items())
    if patched and shown:
        lines = [_did_not_show(bug, blocks, versions) for bug, blocks in patched.items()]
        report.sections.append(("known bugs the patch may fix", "\n".join(lines)))


def _add_failure_sections(report: pytest.TestReport, results: BlockResults) -> None:
    """A test failing outside its blocks: what its blocks saw, so a block that did not show is not lost."""
    versions = results.versions
    shown, not_shown = results.bugs_shown(), results.bugs_not_shown()
    if shown:
        lines = [_showed(bug, blocks, versions) for bug, blocks in shown.items()]
        report.sections.append(("known bugs that also showed", "\n".join(lines)))
    if not_shown:
        lines = [_did_not_show(bug, blocks, versions) for bug, blocks in not_shown.items()]
        report.sections.append(("known bugs that did not show", "\n".join(lines)))


def _blocks(blocks: list[BlockOutcome], news_first: bool = False) -> str:
    """'showed in: <label> (the check saw: ...); did not show in: <label> (its check passed)', either part alone
    where every block went one way; `news_first`: the blocks that did not show first."""
    headings = [("showed in", True), ("did not show in", False)]
    parts = [
        f"{heading}: " + "; ".join(b.describe() for b in blocks if b.showed == showed)
        for heading, showed in (headings[::-1] if news_first else headings)
        if any(b.showed == showed for b in blocks)
    ]
    return "; ".join(parts)


def _showed(bug: KnownBug, blocks: list[BlockOutcome], versions: ClusterVersions) -> str:
    return f"{bug.describe(bug.judged_on(versions))}; {_blocks(blocks)}"


def _strict_failure(bug: KnownBug, blocks: list[BlockOutcome], versions: ClusterVersions) -> str:
    version = bug.judged_on(versions)
    # Where another block showed it, the fix is the less likely reading: the block that passed may be unable to show it.
    mistake = (
        "; every block must show it, and one that cannot is a mistake of the test"
        if any(b.showed for b in blocks)
        else ""
    )
    return (
        f"known bug {bug.issue} did not show on Kubernetes {version} ({bug.component}), which the data says it "
        f"affects ({bug.describe_fix(version)}): if the fix reached this release, record it in expectations/"
        f"{mistake}. Its blocks: {_blocks(blocks, news_first=True)}"
    )


def _did_not_show(bug: KnownBug, blocks: list[BlockOutcome], versions: ClusterVersions) -> str:
    expected = expected_failure(bug, versions)
    reason = expected.reason if expected else bug.describe(bug.judged_on(versions))
    return f"{reason}; {_blocks(blocks)}"
