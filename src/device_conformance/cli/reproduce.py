"""`device-conformance reproduce kubernetes#NNNNNN`: run a known bug's tests on an affected release and on
the release that fixed it, and say whether the bug showed where the data says it does.

The releases default to the matrix versions (expectations/versions.py) around the fix on the mainline
branch, so their binaries are usually cached: the newest matrix release the bug affects and the oldest
one it does not. On the affected release the bug's check runs in its known-bug block, so "reproduced"
means that exact check failed (a strict xfail naming the bug) while the rest of the test passed.

A bug in the kubelet is reproduced with the affected release's kubelet under the fixed release's control
plane (KUBELET_VERSION, within the version-skew policy): only that kubelet is built, and the two runs differ
in nothing but the kubelet. --whole-cluster, or a bug in another component, runs each release whole.

A regression with no fix released has no fixed release to compare with: the comparison is then the newest
matrix release before the first affected one (the last release without the bug), and its verdict is "not
present before the regression" when the same test passes there. For a kubelet bug that older release runs
as the kubelet under the affected release's control plane. An unfixed bug older than every matrix release
has nothing to compare with: only the affected release runs, and the table says so.
"""

from __future__ import annotations

import argparse
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from device_conformance.cli import release_run
from device_conformance.errors import BadInput
from device_conformance.expectations.behaviour import FINDING_PREFIX, KUBELET, KnownBug
from device_conformance.expectations.bugtable import KNOWN_BUGS
from device_conformance.expectations.versions import MATRIX_VERSIONS, KubeVersion, kubelet_skew_allows

_TEST_RE = re.compile(r"suites/[\w/]+\.py::\w+")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "reproduce",
        help="run a known bug's tests on an affected and on the fixed release, and print the verdicts",
        description="Builds (or reuses) the binaries of an affected release and of the fixed one, runs the "
        "bug's tests on each with the local provider, and prints: reproduced / not reproduced on the "
        "affected release, fixed as expected / still shows on the fixed one.",
    )
    p.add_argument("issue", help="the bug, as `device-conformance bugs` names it (kubernetes#134434)")
    p.add_argument("--affected", metavar="X.Y.Z", help="an affected release (default: from the matrix)")
    p.add_argument(
        "--fixed",
        metavar="X.Y.Z",
        help="a fixed release, or one before the bug (default: from the matrix; for a bug with no fix released, "
        "the newest matrix release before its first affected one)",
    )
    p.add_argument("--out", type=Path, default=Path("reproduce-results"), help="results folder")
    p.add_argument("--no-setup", action="store_true", help="do not build missing binaries first")
    p.add_argument(
        "--whole-cluster",
        action="store_true",
        help="run the affected release's whole cluster, not only its kubelet under the fixed control plane",
    )
    p.set_defaults(func=_run)


def affected_run(
    bug: KnownBug, bad: KubeVersion, good: KubeVersion, whole_cluster: bool
) -> tuple[KubeVersion, KubeVersion | None]:
    """(control plane, kubelet or None for the same) of the run on the affected release."""
    if whole_cluster or bug.component != KUBELET or not kubelet_skew_allows(good, bad):
        return bad, None
    return good, bad


def comparison_run(
    bug: KnownBug, bad: KubeVersion, good: KubeVersion, whole_cluster: bool
) -> tuple[KubeVersion, KubeVersion | None]:
    """(control plane, kubelet or None for the same) of the run on the comparison release: a fixed release
    runs whole; a release before the regression runs, for a kubelet bug, as the kubelet under the affected
    release's control plane (so the two runs differ in the kubelet only, as in affected_run)."""
    if good < bad and not whole_cluster and bug.component == KUBELET and kubelet_skew_allows(bad, good):
        return bad, good
    return good, None


def before_the_bug(bug: KnownBug, good: KubeVersion) -> bool:
    """Whether the comparison release predates the bug (a regression's last good release) rather than fixes it."""
    return good < bug.first_affected


def find_bug(issue: str) -> KnownBug:
    wanted = issue if "#" in issue or issue.startswith(FINDING_PREFIX) else f"kubernetes#{issue}"
    for bug in KNOWN_BUGS:
        if bug.issue == wanted:
            return bug
    raise BadInput(
        f"{issue!r} is not a catalogued bug",
        "pick one of `device-conformance bugs`: " + ", ".join(bug.issue for bug in KNOWN_BUGS),
    )


def bug_tests(bug: KnownBug) -> list[str]:
    tests = _TEST_RE.findall(bug.shown_by)
    if not tests:
        raise BadInput(f"{bug.issue} names no test in its data ({bug.shown_by!r})", "add its test's node ID")
    return tests


def pick_releases(bug: KnownBug, affected: str | None, fixed: str | None) -> tuple[KubeVersion, KubeVersion | None]:
    """The affected and the fixed release: given ones are checked against the data; defaults come from
    the matrix, the newest affected one and the oldest fixed one after it; for a bug with no fix released,
    the newest one before its first affected release, or None when the bug predates every matrix release."""
    if affected:
        bad = KubeVersion.parse(affected)
    else:
        candidates = [v for v in MATRIX_VERSIONS if bug.affects(v)]
        if not candidates:
            raise BadInput(f"no matrix release is affected by {bug.issue}", "give --affected X.Y.Z")
        bad = max(candidates)
    if fixed:
        good = KubeVersion.parse(fixed)
    elif not bug.fixes:
        candidates = [v for v in MATRIX_VERSIONS if v < bug.first_affected]
        if not candidates:
            if not bug.affects(bad):
                raise BadInput(f"{bug.issue} does not affect {bad}", "give an affected release")
            return bad, None  # nothing to compare with: no fix, and the bug predates the matrix
        good = max(candidates)
    else:
        candidates = [v for v in MATRIX_VERSIONS if v > bad and not bug.affects(v)]
        if not candidates:
            raise BadInput(f"no matrix release after {bad} has the fix of {bug.issue}", "give --fixed X.Y.Z")
        good = min(candidates)
    if not bug.affects(bad):
        raise BadInput(f"{bug.issue} does not affect {bad} ({bug.describe_fix(bad)})", "give an affected release")
    if bug.affects(good):
        raise BadInput(f"{bug.issue} still affects {good} ({bug.describe_fix(good)})", "give a fixed release")
    return bad, good


@dataclass(frozen=True)
class RunOutcome:
    xfailed_by_bug: int  # tests xfailed naming this bug: its check failed, the rest passed
    passed: int
    failed: int  # failures and errors
    other: int  # skipped, or xfailed for another reason


def read_outcome(junit: Path, bug: KnownBug) -> RunOutcome:
    xfailed = passed = failed = other = 0
    for case in ET.parse(junit).getroot().iter("testcase"):
        results = [child for child in case if child.tag in ("failure", "error", "skipped")]
        if not results:
            passed += 1
        elif results[0].tag in ("failure", "error"):
            failed += 1
        elif results[0].get("type") == "pytest.xfail" and bug.issue in (results[0].get("message") or ""):
            xfailed += 1
        else:
            other += 1
    return RunOutcome(xfailed, passed, failed, other)


FIXED = "fixed as expected"
NOT_BEFORE = "not present before the regression"


def verdict(outcome: RunOutcome, *, affected: bool, before: bool = False) -> str:
    """The verdict of one run: on the affected release, whether the bug's own check failed (and nothing
    else); on the comparison, whether the test passed there, a fixed release or (`before`) one older than the bug."""
    if outcome.failed:
        return "failed (another check failed: see the log)"
    if affected:
        return "reproduced" if outcome.xfailed_by_bug and not outcome.other else "not reproduced"
    if outcome.passed and not (outcome.xfailed_by_bug or outcome.other):
        return NOT_BEFORE if before else FIXED
    return "not run"


NOTHING_TO_COMPARE = "no release to compare with: no fix released, and the bug predates every matrix release"


def _run(args: argparse.Namespace) -> int:
    bug = find_bug(args.issue)
    tests = bug_tests(bug)
    bad, good = pick_releases(bug, args.affected, args.fixed)
    before = good is not None and before_the_bug(bug, good)
    rows = []
    for version, affected in ((bad, True), (good, False)):
        if version is None:
            continue
        if affected:
            control_plane, kubelet = affected_run(bug, bad, good, args.whole_cluster) if good else (bad, None)
        else:
            control_plane, kubelet = comparison_run(bug, bad, version, args.whole_cluster)
        folder = args.out / bug.issue.replace("#", "-") / str(version)
        folder.mkdir(parents=True, exist_ok=True)
        shown = f"kubelet {version} under control plane {control_plane}" if kubelet else f"{version}"
        role = "affected" if affected else ("before the regression" if before else "fixed")
        print(f"[reproduce] {bug.issue} on {shown} ({role}): {folder}", flush=True)
        if not args.no_setup and release_run.setup(control_plane, folder, kubelet) != 0:
            rows.append((version, f"setup failed: see {folder / 'setup.log'}", folder))
            continue
        _, junit = release_run.pytest(control_plane, folder, *tests, "-rA", kubelet=kubelet)
        outcome = read_outcome(junit, bug) if junit.exists() else None
        text = verdict(outcome, affected=affected, before=before) if outcome else "no result: see the log"
        rows.append((version, text, folder))
    if good is None:
        compared = f"{NOTHING_TO_COMPARE} (first affected {bug.first_affected})"
    elif before:
        compared = f"compared with {good}, before the regression (first affected {bug.first_affected})"
    else:
        compared = bug.describe_fix(good)
    print(f"\n{bug.issue}: {bug.title}\n  {compared}\n  tests: {', '.join(tests)}")
    print("| release | verdict | report folder |\n| --- | --- | --- |")
    for version, text, folder in rows:
        print(f"| {version} | {text} | {folder} |")
    expected = ("reproduced",) if good is None else ("reproduced", NOT_BEFORE if before else FIXED)
    return 0 if tuple(text for _, text, _ in rows) == expected else 1
