"""Version-dependent behaviour and known upstream bugs, as data with their upstream references.

A suite asks `outcome(BEHAVIOUR, version)` for what the version under test does, or marks a test of a
known bug `@pytest.mark.known_bug(BUG)`: on versions the bug affects, the test is a strict xfail naming
the issue (and turns red the day the bug is fixed, so the data gets updated). The pytest side of that
lives in pytest_plugin/declarative_markers.py; this package stays plain data and never imports pytest.

Changes are recorded per release branch: upstream cherry-picks fixes into the supported older minors,
so "fixed in 1.32.0" alone would call a patched 1.31.1 affected. A `Fix` names the first patch release
of one branch that carries a change; a tuple of them (newest branch first) says where the change is:
on a branch with an entry from that patch release on, on a minor without one only if it is newer
than the newest entry's minor (the mainline change).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from device_conformance.expectations.versions import KubeVersion


def _release(value: KubeVersion | str) -> KubeVersion:
    return value if isinstance(value, KubeVersion) else KubeVersion.parse(value)


def _branch(version: KubeVersion) -> tuple[int, int]:
    return (version.major, version.minor)


@dataclass(frozen=True, init=False)
class Fix:
    """A change as first released on one release branch: the first tag of that minor that carries it (a
    patch release, or a pre-release such as 1.38.0-alpha.1 on a minor still in development), and the pull
    request that brought it there (the cherry-pick, on an older branch). `source`: how the release was
    established when no release note names the PR (e.g. "module source v1.34.12 pkg/kubelet/cm/dra/...");
    `device-conformance bugs verify` checks the rest against upstream's release notes."""

    release: KubeVersion
    pr: str
    source: str

    def __init__(self, release: KubeVersion | str, pr: str, source: str = "") -> None:
        object.__setattr__(self, "release", _release(release))
        object.__setattr__(self, "pr", pr)
        object.__setattr__(self, "source", source)

    def __str__(self) -> str:
        return f"{self.release} ({self.pr})"


def released_in(version: KubeVersion, fixes: Sequence[Fix]) -> Fix | None:
    """The entry of `fixes` (one per branch) whose change `version` carries, or None if it has none."""
    if not fixes:
        return None
    for fix in fixes:
        if _branch(fix.release) == _branch(version):
            return fix if version >= fix.release else None
    mainline = max(fixes, key=lambda fix: fix.release)
    return mainline if _branch(version) > _branch(mainline.release) else None


def branch_problems(what: str, fixes: Sequence[Fix], earliest: KubeVersion) -> list[str]:
    """What is wrong with a per-branch release list: it must be newest branch first, one entry per
    branch, name a PR, and not predate `earliest` (the first release the change can apply to)."""
    problems = []
    branches = [_branch(fix.release) for fix in fixes]
    if branches != sorted(set(branches), reverse=True):
        problems.append(f"{what}: releases must be one per branch, newest branch first: {[str(f) for f in fixes]}")
    for fix in fixes:
        if not fix.pr.strip():
            problems.append(f"{what}: {fix.release} names no pull request")
        if fix.release < earliest:
            problems.append(f"{what}: {fix.release} is before {earliest}")
    return problems


@dataclass(frozen=True, init=False)
class Since:
    """From `release` on the kubelet does `outcome` (`reference`: the upstream change), and on each
    older branch in `backports` from that patch release on."""

    release: KubeVersion
    outcome: str
    reference: str
    backports: tuple[Fix, ...]

    def __init__(
        self, release: KubeVersion | str | int, outcome: str, reference: str, backports: Sequence[Fix] = ()
    ) -> None:
        if isinstance(release, int):  # Since(30, ...) means from 1.30.0
            release = KubeVersion(1, release, 0)
        object.__setattr__(self, "release", _release(release))
        object.__setattr__(self, "outcome", outcome)
        object.__setattr__(self, "reference", reference)
        object.__setattr__(self, "backports", tuple(backports))

    @property
    def minor(self) -> int:
        return self.release.minor

    @property
    def releases(self) -> tuple[Fix, ...]:
        """Where this outcome starts, newest branch first: the mainline release, then the backports."""
        return (Fix(self.release, self.reference), *self.backports)

    def applies_to(self, version: KubeVersion) -> bool:
        return released_in(version, self.releases) is not None


@dataclass(frozen=True)
class Behaviour:
    """What the kubelet does in some situation, by version; entries sorted by release."""

    name: str
    entries: tuple[Since, ...]

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))

    def problems(self) -> list[str]:
        problems = []
        releases = [entry.release for entry in self.entries]
        if releases != sorted(set(releases)):
            problems.append(f"{self.name!r}: entries must be sorted by release, one per release: {releases}")
        for index, entry in enumerate(self.entries):
            # at() relies on this: a backport lands on a branch at or after the previous entry's release.
            earliest = self.entries[index - 1].release if index else entry.release
            what = f"{self.name!r} {entry.outcome}"
            problems += branch_problems(what, entry.releases, KubeVersion(earliest.major, earliest.minor, 0))
        return problems

    def at(self, version: KubeVersion) -> Since:
        # A later entry's backports are on branches newer than any earlier entry's release, so the last
        # entry that reached `version` is the one in force.
        matching = [entry for entry in self.entries if entry.applies_to(version)]
        if not matching:
            raise LookupError(f"no recorded outcome of {self.name!r} for Kubernetes {version}")
        return matching[-1]


# The component a bug lives in decides whose release judges it when the kubelet and the control plane differ
# (KUBELET_VERSION, or an existing cluster mid-upgrade).
KUBELET = "kubelet"
CONTROLLER_MANAGER = "kube-controller-manager"
SCHEDULER = "kube-scheduler"
COMPONENTS = (KUBELET, CONTROLLER_MANAGER, SCHEDULER)


@dataclass(frozen=True)
class ClusterVersions:
    """The releases of a cluster under test: the node's kubelet and the control plane. `patch`: why the
    components in `patched` (built from a source tree, K8S_SOURCE) are their release plus a patch, not exactly
    it (toolchain/source_tree.py); "" when every component is a release."""

    kubelet: KubeVersion
    control_plane: KubeVersion
    patch: str = ""
    patched: frozenset[str] = frozenset()

    def of(self, component: str) -> KubeVersion:
        return self.kubelet if component == KUBELET else self.control_plane

    def patched_component(self, component: str) -> bool:
        return bool(self.patch) and component in self.patched


@dataclass(frozen=True, init=False)
class KnownBug:
    """An upstream bug a test shows: present from `first_affected` until the fix reached the release's
    branch (`fixes`: newest branch first, the mainline fix, then its cherry-picks), in `component`.

    `issue` is the upstream report, 'repository#number' (kubernetes#127803). A bug this suite found that nobody
    has reported upstream yet is `finding:<slug>`, with its report ready to file in docs/findings/<slug>.md;
    once filed, the entry takes the new issue's number. `finding`: the slug of such a page for an entry whose
    issue names something else (the pull request that brought the bug, say) because no issue exists."""

    issue: str
    title: str
    first_affected: KubeVersion
    fixes: tuple[Fix, ...]
    shown_by: str  # which check shows it, for the bug table
    component: str
    finding: str  # the slug of its docs/findings page, "" when it has none

    def __init__(
        self,
        issue: str,
        title: str,
        first_affected: KubeVersion | str,
        fixes: Sequence[Fix] = (),
        shown_by: str = "",
        component: str = KUBELET,
        finding: str = "",
    ) -> None:
        object.__setattr__(self, "issue", issue)
        object.__setattr__(self, "title", title)
        object.__setattr__(self, "first_affected", _release(first_affected))
        object.__setattr__(self, "fixes", tuple(fixes))
        object.__setattr__(self, "shown_by", shown_by)
        object.__setattr__(self, "component", component)
        unreported = issue.removeprefix(FINDING_PREFIX) if issue.startswith(FINDING_PREFIX) else ""
        object.__setattr__(self, "finding", finding or unreported)
        problems = self.problems()
        if problems:
            raise ValueError("; ".join(problems))

    @property
    def unreported(self) -> bool:
        """Whether no upstream issue exists yet (issue 'finding:<slug>')."""
        return self.issue.startswith(FINDING_PREFIX)

    @property
    def finding_page(self) -> str:
        """The report ready to file upstream, relative to the repository root ("" when there is none)."""
        return f"docs/findings/{self.finding}.md" if self.finding else ""

    def problems(self) -> list[str]:
        problems = []
        if not (_ISSUE_RE.fullmatch(self.issue) or _FINDING_RE.fullmatch(self.issue)):
            problems.append(f"issue {self.issue!r} is not 'repository#number' or '{FINDING_PREFIX}<slug>'")
        if self.finding and not _SLUG_RE.fullmatch(self.finding):
            problems.append(f"{self.issue}: finding {self.finding!r} is not a lower-case slug (a-z, 0-9, -)")
        if self.unreported and self.finding != self.issue.removeprefix(FINDING_PREFIX):
            problems.append(f"{self.issue}: an unreported finding's page is its own slug, not {self.finding!r}")
        if not self.title.strip():
            problems.append(f"{self.issue}: no title")
        if self.component not in COMPONENTS:
            problems.append(f"{self.issue}: component {self.component!r} is not one of {', '.join(COMPONENTS)}")
        problems += branch_problems(self.issue, self.fixes, self.first_affected)
        problems += [f"{self.issue}: fix {fix} names no PR number" for fix in self.fixes if not _PR_RE.search(fix.pr)]
        return problems

    def affects(self, version: KubeVersion) -> bool:
        return version >= self.first_affected and released_in(version, self.fixes) is None

    def judged_on(self, versions: ClusterVersions) -> KubeVersion:
        """The release of the component this bug lives in."""
        return versions.of(self.component)

    @property
    def mainline_fix(self) -> Fix | None:
        return self.fixes[0] if self.fixes else None

    @property
    def fixed_in(self) -> KubeVersion | None:
        """The mainline fix release (every later minor is fixed); see fix_for() for older branches."""
        return self.fixes[0].release if self.fixes else None

    @property
    def fix(self) -> str:
        """The fix PR, with its cherry-picks to older branches."""
        if not self.fixes:
            return ""
        mainline, *backports = self.fixes
        if not backports:
            return mainline.pr
        return f"{mainline.pr} (cherry-picks: {', '.join(str(fix) for fix in backports)})"

    @property
    def since_minor(self) -> int:
        return self.first_affected.minor

    def fix_for(self, version: KubeVersion) -> Fix | None:
        """The fix that reaches `version`'s branch (its own cherry-pick, or the mainline fix for later
        minors), whether or not `version` is already past it; None for a branch no fix reached."""
        for fix in self.fixes:
            if _branch(fix.release) == _branch(version):
                return fix
        mainline = self.mainline_fix
        return mainline if mainline and _branch(version) > _branch(mainline.release) else None

    def describe_fix(self, version: KubeVersion) -> str:
        """The fix as it concerns `version`, for messages: e.g. 'fixed in 1.31.1 by kubernetes#127207
        (mainline: 1.32.0 by kubernetes#126343)' or 'no fix on 1.35 (mainline: 1.37.0 by ...)'."""
        mainline = self.mainline_fix
        if mainline is None:
            return "no fix released"
        fix = self.fix_for(version)
        mainline_text = f"mainline: {mainline.release} by {mainline.pr}"
        if fix is None:
            return f"no fix on {version.major}.{version.minor} ({mainline_text})"
        if fix == mainline:
            return f"fixed in {fix.release} by {fix.pr}"
        return f"fixed in {fix.release} by {fix.pr} ({mainline_text})"

    def describe(self, version: KubeVersion) -> str:
        """What a test of this bug says on `version`: the issue, the title and the fix as it concerns
        that release's branch."""
        return f"known upstream bug {self.issue} on Kubernetes {version}: {self.title} ({self.describe_fix(version)})"


@dataclass(frozen=True)
class ExpectedFailure:
    """How a test of a known bug is judged where the bug affects the release under test: a strict expected
    failure (its passing turns red: the fix reached the release and the data must say so), except on a
    component built from a patched source tree, where the patch may be the fix: not strict, and said so."""

    strict: bool
    reason: str


PATCHED_TREE = "patched tree"


def expected_failure(bug: KnownBug, versions: ClusterVersions) -> ExpectedFailure | None:
    """The expected failure of `bug`'s test on this cluster (None where the bug does not affect the release of
    its component). A source tree that is a release plus a patch is judged as that release with a patch: the
    known bug stays expected, not strictly."""
    version = bug.judged_on(versions)
    if not bug.affects(version):
        return None
    if versions.patched_component(bug.component):
        return ExpectedFailure(
            strict=False,
            reason=f"{PATCHED_TREE}: the known bug {bug.issue} may be fixed by the patch ({versions.patch}); "
            f"{bug.describe(version)}",
        )
    return ExpectedFailure(strict=True, reason=bug.describe(version))


_ISSUE_RE = re.compile(r"[A-Za-z0-9_.-]+#\d+")
# A bug found here and not reported upstream yet: finding:<slug>, its report in docs/findings/<slug>.md.
FINDING_PREFIX = "finding:"
_SLUG_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_FINDING_RE = re.compile(re.escape(FINDING_PREFIX) + _SLUG_RE.pattern)
_PR_RE = re.compile(r"#\d+")


def outcome(behaviour: Behaviour, version: KubeVersion) -> str:
    return behaviour.at(version).outcome
