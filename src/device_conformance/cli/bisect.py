"""`device-conformance bisect TEST --good V1 --bad V2`: the first release whose outcome for TEST differs.

Releases in between are every patch release of every minor from the older to the newer endpoint that
the Go module proxy serves (patch numbers are probed upwards: the proxy's own list is incomplete). Each
step runs TEST with --ignore-known-bugs, so the outcome is the kubelet's behaviour, not what the bug data
expects. By default (--swap kubelet) only the kubelet changes from step to step: the control plane stays
at the newer endpoint (KUBELET_VERSION, within the version-skew policy), so a step builds one binary
instead of four; a step older than the skew allows, or --swap all, runs that release's own control
plane. A release that cannot be built here (403 on the proxy, no checksum entry) is skipped, as
`git bisect skip` would; an endpoint that cannot be had is refused before anything is built or started.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

from device_conformance.cli import release_run
from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import PRE_RELEASE_KINDS, KubeVersion, kubelet_skew_allows

PASS, FAIL, UNTESTABLE = "pass", "fail", "untestable"
MISSES_BEFORE_END_OF_MINOR = 3  # the proxy refuses single patches (e.g. 1.35.7) but serves later ones


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "bisect",
        help="find the first release whose outcome for a test differs",
        description="Binary search over the patch releases between --good and --bad (across minors) for the "
        "first one whose outcome for TEST is that of the newer endpoint. Prints each step and the answer.",
    )
    p.add_argument("test", help="a pytest node ID, e.g. suites/device_plugin/test_plugin_restart.py::test_x")
    p.add_argument("--good", required=True, metavar="X.Y.Z", help="a release (or tag: 1.38.0-beta.0) where TEST passes")
    p.add_argument("--bad", required=True, metavar="X.Y.Z", help="a release where TEST fails")
    p.add_argument("--out", type=Path, default=Path("bisect-results"), help="results folder")
    p.add_argument(
        "--swap",
        choices=(SWAP_KUBELET, SWAP_ALL),
        default=SWAP_KUBELET,
        help="kubelet (default): each step swaps only the kubelet under the newer endpoint's control plane; "
        "all: each step runs that release's whole cluster (for a change in the control plane, e.g. the "
        "device-taint eviction controller)",
    )
    p.set_defaults(func=_run)


SWAP_KUBELET, SWAP_ALL = "kubelet", "all"


def step_versions(step: KubeVersion, newer: KubeVersion, swap: str) -> tuple[KubeVersion, KubeVersion | None]:
    """(control plane, kubelet or None for the same) of one step: the newer endpoint's control plane with
    the step's kubelet, unless --swap all or the step is older than the version-skew policy allows."""
    if swap == SWAP_ALL or step == newer or not kubelet_skew_allows(newer, step):
        return step, None
    return newer, step


def releases_between(
    older: KubeVersion, newer: KubeVersion, exists: Callable[[KubeVersion], bool]
) -> list[KubeVersion]:
    """older, every release the proxy serves strictly between, newer (ascending). The pre-release tags of a
    minor's .0 (1.38.0-alpha.1 ... -rc.1) are probed when an endpoint is one of them: bisecting into a
    minor still in development, or from one."""
    found = [older]
    for minor in range(older.minor, newer.minor + 1):
        first = KubeVersion(older.major, minor, 0)
        if first in (older.release, newer.release) and (older.is_prerelease or newer.is_prerelease):
            found += prereleases_between(older, newer, first, exists)
        patch = older.patch + (0 if older.is_prerelease else 1) if minor == older.minor else 0
        misses = 0
        while misses < MISSES_BEFORE_END_OF_MINOR:
            candidate = KubeVersion(older.major, minor, patch)
            if candidate >= newer:
                break
            if exists(candidate):
                found.append(candidate)
                misses = 0
            else:
                misses += 1
            patch += 1
    return [*found, newer]


# Pre-release numbers run without gaps. alpha.0 is no release (the tag put on master when the previous
# minor branched, with no release notes), so alpha starts at 1.
PRERELEASE_MISSES = 2


def prereleases_between(
    older: KubeVersion, newer: KubeVersion, release: KubeVersion, exists: Callable[[KubeVersion], bool]
) -> list[KubeVersion]:
    """The pre-release tags of `release` (an X.Y.0) strictly between older and newer that the proxy serves,
    in upstream's order: alpha.N, then beta.N, then rc.N."""
    found: list[KubeVersion] = []
    for kind in PRE_RELEASE_KINDS:
        number, misses = (1 if kind == "alpha" else 0), 0
        while misses < PRERELEASE_MISSES:
            candidate = KubeVersion(release.major, release.minor, release.patch, f"{kind}.{number}")
            if candidate >= newer:
                return found
            number += 1
            if candidate <= older:
                if older.release == release and older.pre.split(".")[0] != kind:
                    break  # older is a later kind: no tag of this kind is after it
                continue
            if exists(candidate):
                found.append(candidate)
                misses = 0
            else:
                misses += 1
    return found


def search(
    releases: list[KubeVersion], outcome: Callable[[KubeVersion], str], say: Callable[[str], None]
) -> KubeVersion:
    """The first release (after the first) whose outcome is the last release's; assumes one change."""
    first, last = outcome(releases[0]), outcome(releases[-1])
    say(f"{releases[0]}: {first}   {releases[-1]}: {last}")
    if UNTESTABLE in (first, last) or first == last:
        raise BadInput(
            f"the endpoints give {first} on {releases[0]} and {last} on {releases[-1]}",
            "give a --good release where the test passes and a --bad one where it fails; a change outside the "
            "kubelet does not follow a kubelet swap: use --swap all for it",
        )
    candidates = list(releases)
    low, high = 0, len(candidates) - 1
    while high - low > 1:
        middle = (low + high) // 2
        result = outcome(candidates[middle])
        say(f"{candidates[middle]}: {result}")
        if result == UNTESTABLE:
            del candidates[middle]
            high -= 1
        elif result == first:
            low = middle
        else:
            high = middle
    return candidates[high]


def proxy_serves(version: KubeVersion) -> bool:
    """Whether `go` can get k8s.io/kubernetes at this version (its .info through GOPROXY)."""
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    done = subprocess.run(
        ["go", "list", "-m", "-json", f"k8s.io/kubernetes@v{version}"],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        check=False,
    )
    return done.returncode == 0


def run_outcome(test: str, version: KubeVersion, folder: Path, kubelet: KubeVersion | None = None) -> str:
    if release_run.setup(version, folder, kubelet) != 0:
        return UNTESTABLE
    _, junit = release_run.pytest(version, folder, test, "--ignore-known-bugs", kubelet=kubelet)
    if not junit.exists():
        return UNTESTABLE
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    tags = {child.tag for case in cases for child in case}
    if not cases or "skipped" in tags:
        return UNTESTABLE
    return FAIL if tags & {"failure", "error"} else PASS


def _run(args: argparse.Namespace) -> int:
    good, bad = KubeVersion.parse(args.good), KubeVersion.parse(args.bad)
    if good == bad:
        raise BadInput(f"--good and --bad are both {good}", "give two different releases")
    older, newer = sorted((good, bad))
    # The endpoints must be had (the steps between are probed below, and skipped when they cannot be built).
    wanted = [need for end in (older, newer) for need in release_run.needed(*step_versions(end, newer, args.swap))]
    release_run.refuse_unavailable(wanted, lambda line: print(f"[bisect] {line}", flush=True))
    releases = releases_between(older, newer, proxy_serves)
    print(f"[bisect] {len(releases)} releases from {older} to {newer}: {', '.join(map(str, releases))}", flush=True)
    steps: list[dict[str, str]] = []

    def outcome(version: KubeVersion) -> str:
        control_plane, kubelet = step_versions(version, newer, args.swap)
        shown = f"kubelet {version} under control plane {control_plane}" if kubelet else f"{version} (whole cluster)"
        print(f"[bisect] running {shown}", flush=True)
        result = run_outcome(args.test, control_plane, args.out / str(version), kubelet)
        steps.append({"release": str(version), "control_plane": str(control_plane), "outcome": result})
        return result

    answer = search(releases, outcome, lambda line: print(f"[bisect] {line}", flush=True))
    change = "fixed" if newer == good else "broken"
    print(f"[bisect] first release where {args.test} is {change}: {answer}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bisect.json").write_text(json.dumps({"test": args.test, "answer": str(answer), "steps": steps}))
    return 0
