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

A bug that is not in the catalogue: `--test NODEID` (repeatable; a node ID under suites/ or a test file of
your own) with `--affected X.Y.Z | --affected-source DIR` and `--fixed X.Y.Z | --fixed-source DIR` runs those
tests on both sides with --ignore-known-bugs (the kubelet's raw behaviour, as bisect sees it): *reproduced*
when every test fails on the affected side, *fixed as expected* when every test passes on the fixed one; a
setup error, an error in a test's setup or teardown, a skip or no result is said as such and is no reproduction.
Two releases are compared as above, the affected kubelet under the fixed release's control plane (unless
--whole-cluster, or the skew policy forbids it); a source tree (K8S_SOURCE, built as all four binaries) runs
whole clusters on both sides. Every release is checked before anything is built or started: one neither
cached nor buildable from the Go module proxy is refused naming the fix (release_run.refuse_unavailable).
"""

from __future__ import annotations

import argparse
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from device_conformance.cli import release_run
from device_conformance.core.errors import BadInput
from device_conformance.expectations.behaviour import FINDING_PREFIX, KUBELET, KnownBug
from device_conformance.expectations.bugtable import KNOWN_BUGS
from device_conformance.expectations.versions import MATRIX_VERSIONS, KubeVersion
from device_conformance.settings import resolve
from device_conformance.toolchain.source_tree import check_tree, tree_version

_TEST_RE = re.compile(r"suites/[\w/]+\.py::\w+")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "reproduce",
        help="run a known bug's tests (or your own, --test) on an affected and on a fixed side; print the verdicts",
        description="Builds (or reuses) the binaries of an affected release and of the fixed one, runs the "
        "bug's tests on each with the local provider, and prints: reproduced / not reproduced on the "
        "affected release, fixed as expected / still shows on the fixed one. With --test instead of a bug: "
        "your tests on --affected/--affected-source and --fixed/--fixed-source (docs/reproducing-a-new-bug.md).",
    )
    p.add_argument(
        "issue", nargs="?", help="the bug, as `device-conformance bugs` names it (kubernetes#134434); or give --test"
    )
    p.add_argument(
        "--test",
        dest="tests",
        action="append",
        metavar="NODEID",
        help="instead of a catalogued bug: a test to run on both sides, a pytest node ID under suites/ or a test "
        "file of your own (repeatable); it must fail on the affected side and pass on the fixed one",
    )
    p.add_argument("--affected", metavar="X.Y.Z", help="an affected release (default: from the matrix)")
    p.add_argument(
        "--affected-source", metavar="DIR", type=Path, help="with --test: a Kubernetes source tree as the affected side"
    )
    p.add_argument(
        "--fixed",
        metavar="X.Y.Z",
        help="a fixed release, or one before the bug (default: from the matrix; for a bug with no fix released, "
        "the newest matrix release before its first affected one)",
    )
    p.add_argument(
        "--fixed-source",
        metavar="DIR",
        type=Path,
        help="with --test: a Kubernetes source tree (a checkout, or `k8s-source get` with the fix applied) as the "
        "fixed side",
    )
    p.add_argument("--out", type=Path, default=Path("reproduce-results"), help="results folder")
    p.add_argument("--no-setup", action="store_true", help="do not build missing binaries first")
    p.add_argument(
        "--whole-cluster",
        action="store_true",
        help="run the affected release's whole cluster, not only its kubelet under the fixed control plane",
    )
    for option, knob, repeat in KNOB_OPTIONS:
        p.add_argument(option, dest=knob, action="append" if repeat else "store", help=f"passed to pytest: {option}")
    p.set_defaults(func=_run)


# The component knobs (settings.KNOBS) reproduce passes to pytest on both sides: (option, knob, repeatable).
KNOB_OPTIONS = (
    ("--kubelet-verbosity", "kubelet_verbosity", False),
    ("--feature-gates", "feature_gates", True),
    ("--kubelet-arg", "kubelet_args", True),
    ("--kubelet-config", "kubelet_config", True),
)


def affected_run(
    bug: KnownBug, bad: KubeVersion, good: KubeVersion, whole_cluster: bool
) -> tuple[KubeVersion, KubeVersion | None]:
    """(control plane, kubelet or None for the same) of the run on the affected release."""
    return release_run.swap_kubelet(bad, good, kubelet_only=not whole_cluster and bug.component == KUBELET)


def comparison_run(
    bug: KnownBug, bad: KubeVersion, good: KubeVersion, whole_cluster: bool
) -> tuple[KubeVersion, KubeVersion | None]:
    """(control plane, kubelet or None for the same) of the run on the comparison release: a fixed release
    runs whole; a release before the regression runs, for a kubelet bug, as the kubelet under the affected
    release's control plane (so the two runs differ in the kubelet only, as in affected_run)."""
    return release_run.swap_kubelet(good, bad, kubelet_only=not whole_cluster and bug.component == KUBELET)


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
    skipped_because: tuple[str, ...] = ()  # each distinct skip reason, as pytest gave it


def read_outcome(junit: Path, bug: KnownBug) -> RunOutcome:
    xfailed = passed = failed = other = 0
    reasons: dict[str, None] = {}
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
            if results[0].get("type") == "pytest.skip":
                reasons[results[0].get("message") or ""] = None
    return RunOutcome(xfailed, passed, failed, other, tuple(r for r in reasons if r))


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
    if outcome.skipped_because and not outcome.passed:  # e.g. the test needs a later release than the comparison
        return f"not run: skipped ({'; '.join(outcome.skipped_because)})"
    return "not run"


NOTHING_TO_COMPARE = "no release to compare with: no fix released, and the bug predates every matrix release"
SETUP_FAILED = "errored: setup failed, see {log} (an error at setup is not a reproduction)"


# -- the runs, shared by both kinds of reproduction ----------------------------------------------------------


@dataclass(frozen=True)
class Side:
    """One side of a comparison: `version` under test (a tree's: the release it is based on), run as the
    control plane's release with the node's kubelet at `kubelet` when given, or built from `source`."""

    role: str  # "affected", "fixed", "before the regression"
    version: KubeVersion
    control_plane: KubeVersion
    kubelet: KubeVersion | None = None
    source: Path | None = None
    patch: str = ""  # why a source tree counts as its release plus a patch ("" for a pristine tag)

    @property
    def label(self) -> str:
        """The side in the verdict table."""
        if self.source is None:
            return str(self.version)
        return f"{self.version}{' + patch' if self.patch else ''} (source {self.source})"

    def shown(self) -> str:
        if self.source is not None:
            return f"the tree {self.source} ({self.version}{'; ' + self.patch if self.patch else ''}), whole cluster"
        if self.kubelet is not None:
            return f"kubelet {self.kubelet} under control plane {self.control_plane}"
        return str(self.version)


@dataclass(frozen=True)
class Row:
    side: Side
    verdict: str
    folder: Path


def run_sides(
    sides: Sequence[Side],
    folder_of: Callable[[Side], Path],
    pytest_args: Sequence[str],
    judge: Callable[[Side, Path | None], str],
    *,
    what: str,
    no_setup: bool = False,
) -> list[Row]:
    """Set up and run pytest with `pytest_args` on each side, judging its JUnit XML (None: pytest wrote none)."""
    rows = []
    for side in sides:
        folder = folder_of(side)
        folder.mkdir(parents=True, exist_ok=True)
        print(f"[reproduce] {what} on {side.shown()} ({side.role}): {folder}", flush=True)
        if not no_setup and release_run.setup(side.control_plane, folder, side.kubelet, source=side.source) != 0:
            rows.append(Row(side, SETUP_FAILED.format(log=folder / "setup.log"), folder))
            continue
        _, junit = release_run.pytest(
            side.control_plane, folder, *pytest_args, kubelet=side.kubelet, source=side.source
        )
        rows.append(Row(side, judge(side, junit if junit.exists() else None), folder))
    return rows


def refuse_unavailable(sides: Sequence[Side]) -> None:
    """Before anything is built or started: refuse a release no side can have (release_run.refuse_unavailable);
    a source tree was checked when its side was made."""
    wanted = [
        need for side in sides if side.source is None for need in release_run.needed(side.control_plane, side.kubelet)
    ]
    release_run.refuse_unavailable(wanted, lambda line: print(f"[reproduce] {line}", flush=True))


def print_table(heading: Sequence[str], rows: Sequence[Row]) -> None:
    print("\n" + "\n  ".join(heading))
    print("| release | verdict | report folder |\n| --- | --- | --- |")
    for row in rows:
        print(f"| {row.side.label} | {row.verdict} | {row.folder} |")


def knob_args(args: argparse.Namespace) -> list[str]:
    """The component knobs given to reproduce, as pytest options (checked here, before anything starts)."""
    given = {knob: getattr(args, knob, None) for _, knob, _ in KNOB_OPTIONS}
    resolve({**given, "provider": "local"}, {})  # raises BadInput naming the bad knob and its fix
    argv = []
    for option, knob, _ in KNOB_OPTIONS:
        value = given[knob]
        for item in value if isinstance(value, list) else [] if value is None else [value]:
            argv.append(f"{option}={item}")
    return argv


def _run(args: argparse.Namespace) -> int:
    check_arguments(args)
    if args.tests:
        return _run_tests(args)
    return _run_bug(args)


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse a combination that names no test, or not exactly one of each side."""
    if args.issue and args.tests:
        raise BadInput(
            f"both a catalogued bug ({args.issue}) and --test are given",
            "give the bug alone (its tests run), or --test alone for tests of a bug not in the catalogue",
        )
    if not args.issue and not args.tests:
        raise BadInput(
            "no bug and no test given",
            "name a catalogued bug (`device-conformance bugs` lists them), or give --test NODEID with "
            "--affected/--affected-source and --fixed/--fixed-source",
        )
    for side in ("affected", "fixed"):
        release, source = getattr(args, side), getattr(args, f"{side}_source")
        if release and source:
            raise BadInput(
                f"--{side} {release} and --{side}-source {source} both name the {side} side",
                f"give one of them: --{side} X.Y.Z for a release, --{side}-source DIR for a source tree",
            )
        if source and not args.tests:
            raise BadInput(
                f"--{side}-source goes with --test, not with the catalogued bug {args.issue}",
                "run the bug's test (`device-conformance bugs` names it) with --test NODEID "
                f"--{side}-source {source} and the other side",
            )
        if args.tests and not (release or source):
            raise BadInput(
                f"--test needs the {side} side",
                f"give --{side} X.Y.Z (a release) or --{side}-source DIR (a Kubernetes source tree)",
            )
    for test in args.tests or ():
        path = Path(test.split("::")[0])
        if not path.exists():
            raise BadInput(
                f"--test {test!r}: {path} does not exist",
                "give a pytest node ID under suites/ (suites/dra/test_x.py::test_y) or the path of your own test "
                "file, relative to where you run reproduce",
            )


# -- a catalogued bug -----------------------------------------------------------------------------------------


def _run_bug(args: argparse.Namespace) -> int:
    bug = find_bug(args.issue)
    tests = bug_tests(bug)
    bad, good = pick_releases(bug, args.affected, args.fixed)
    knobs = knob_args(args)
    before = good is not None and before_the_bug(bug, good)
    sides = [Side("affected", bad, *(affected_run(bug, bad, good, args.whole_cluster) if good else (bad, None)))]
    if good is not None:
        role = "before the regression" if before else "fixed"
        sides.append(Side(role, good, *comparison_run(bug, bad, good, args.whole_cluster)))
    if not args.no_setup:
        refuse_unavailable(sides)

    def judge(side: Side, junit: Path | None) -> str:
        if junit is None:
            return "no result: see the log"
        return verdict(read_outcome(junit, bug), affected=side.role == "affected", before=before)

    folder_of = lambda side: args.out / bug.issue.replace("#", "-") / str(side.version)  # noqa: E731
    rows = run_sides(sides, folder_of, [*tests, "-rA", *knobs], judge, what=bug.issue, no_setup=args.no_setup)
    if good is None:
        compared = f"{NOTHING_TO_COMPARE} (first affected {bug.first_affected})"
    elif before:
        compared = f"compared with {good}, before the regression (first affected {bug.first_affected})"
    else:
        compared = bug.describe_fix(good)
    why = "--whole-cluster" if args.whole_cluster else f"the bug is in {bug.component}"
    if bug.component == KUBELET and not args.whole_cluster:
        why = "the two releases are further apart than the version-skew policy allows"
    heading = [f"{bug.issue}: {bug.title}", compared, f"tests: {', '.join(tests)}"]
    print_table([*heading, comparison(sides, why)] if good is not None else heading, rows)
    expected = ("reproduced",) if good is None else ("reproduced", NOT_BEFORE if before else FIXED)
    return 0 if tuple(row.verdict for row in rows) == expected else 1


# -- tests of a bug not in the catalogue ----------------------------------------------------------------------


@dataclass(frozen=True)
class SideRun:
    """What pytest's JUnit XML says of the given tests on one side."""

    passed: int = 0
    failed: int = 0
    errors: int = 0  # an error in setup or teardown, or at collection
    skipped: int = 0  # skipped, or xfailed by a marker of the test's own

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.errors + self.skipped


_CASE_KEYS = (("error", "errors"), ("failure", "failed"), ("skipped", "skipped"))


def read_side_run(junit: Path) -> SideRun:
    counts = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0}
    for case in ET.parse(junit).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        # an error first: a test that failed and then errored in teardown is no clean failure
        key = next((key for tag, key in _CASE_KEYS if tag in tags), "passed")
        counts[key] += 1
    return SideRun(**counts)


REPRODUCED = "reproduced"


def side_verdict(run: SideRun | None, *, affected: bool) -> str:
    """The verdict of one side: on the affected side every test must fail (reproduced), on the fixed side
    every test must pass (fixed); an error, a skip or no result is neither, and says so."""
    if run is None:
        return "errored: pytest wrote no result, see its pytest.log"
    if run.total == 0:
        return "errored: no test ran (check the node IDs), see its pytest.log"
    if run.errors:
        return (
            f"errored: {run.errors} of {run.total} errored in setup, teardown or collection, see its pytest.log "
            "(an error is not a reproduction)"
        )
    if run.skipped:
        return f"not run: {run.skipped} of {run.total} skipped or xfailed, see its pytest.log"
    if affected:
        if run.failed == run.total:
            return REPRODUCED
        if not run.failed:
            return "not reproduced: the test passed"
        return f"not reproduced: {run.failed} of {run.total} failed"
    if not run.failed:
        return FIXED
    return f"still fails on the fixed side: {run.failed} of {run.total} failed"


def source_side(role: str, tree: Path) -> Side:
    """A side built from a source tree: checked and its version read now, before anything is built."""
    tree = tree.absolute()
    check_tree(tree)
    found = tree_version(tree)
    if found is None:
        raise BadInput(
            f"--{role}-source {tree} does not say which Kubernetes release it is (no .kube-version-defs, not a "
            "git checkout with tags)",
            "make it with `device-conformance k8s-source get VERSION DIR`, or tag the checkout's base commit "
            "with its release (vX.Y.Z)",
        )
    return Side(role, found.version, found.version, source=tree, patch=found.patch)


def given_sides(args: argparse.Namespace) -> tuple[list[Side], str]:
    """The affected and the fixed side of a --test run, and how they are compared (for the heading)."""
    bad = KubeVersion.parse(args.affected) if args.affected else None
    good = KubeVersion.parse(args.fixed) if args.fixed else None
    if bad is not None and bad == good:
        raise BadInput(f"--affected and --fixed are both {bad}", "give two different releases")
    if bad is None or good is None:
        sides = [
            source_side("affected", args.affected_source) if bad is None else Side("affected", bad, bad),
            source_side("fixed", args.fixed_source) if good is None else Side("fixed", good, good),
        ]
        return sides, comparison(sides, "a source tree is built as all four binaries")
    kubelet_only = not args.whole_cluster
    sides = [
        Side("affected", bad, *release_run.swap_kubelet(bad, good, kubelet_only)),
        Side("fixed", good, *release_run.swap_kubelet(good, bad, kubelet_only)),
    ]
    if args.whole_cluster:
        why = "--whole-cluster"
    else:
        why = f"{min(bad, good)} is more than the version-skew policy allows below {max(bad, good)}"
    return sides, comparison(sides, why)


def comparison(sides: Sequence[Side], why_whole: str) -> str:
    """How the sides were compared, for the heading: a kubelet swapped under the other side's control plane,
    or whole clusters (and why)."""
    swapped = next((side for side in sides if side.kubelet is not None), None)
    if swapped is None:
        return f"whole clusters ({why_whole}): each side runs its own four binaries"
    return (
        f"kubelet-only comparison: the {swapped.kubelet} kubelet under the {swapped.control_plane} control "
        "plane against that release's whole cluster, so the two runs differ in the kubelet only "
        "(--whole-cluster runs each release whole, for a bug outside the kubelet)"
    )


def _run_tests(args: argparse.Namespace) -> int:
    tests = list(args.tests)
    knobs = knob_args(args)
    sides, how = given_sides(args)
    if not args.no_setup:
        refuse_unavailable(sides)
    name = Path(tests[0].split("::")[0]).stem + (f"-and-{len(tests) - 1}-more" if len(tests) > 1 else "")
    folder_of = lambda side: args.out / name / f"{side.role}-{side.version}{'-source' if side.source else ''}"  # noqa: E731

    def judge(side: Side, junit: Path | None) -> str:
        return side_verdict(read_side_run(junit) if junit else None, affected=side.role == "affected")

    pytest_args = [*tests, "-rA", "--ignore-known-bugs", *knobs]
    rows = run_sides(sides, folder_of, pytest_args, judge, what=", ".join(tests), no_setup=args.no_setup)
    print_table(
        [
            f"tests: {', '.join(tests)}",
            how,
            "known-bug expectations ignored (--ignore-known-bugs): each side's raw outcome; the affected side must "
            "fail, the fixed side pass",
        ],
        rows,
    )
    return 0 if tuple(row.verdict for row in rows) == (REPRODUCED, FIXED) else 1
