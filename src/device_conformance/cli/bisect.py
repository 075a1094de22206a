"""`device-conformance bisect TEST --good V1 --bad V2`: the first release whose outcome for TEST differs.

Releases in between are every patch release of every minor from the older to the newer endpoint that
the Go module proxy serves (patch numbers are probed upwards: the proxy's own list is incomplete). Each
step builds (or reuses from the cache) that release and runs TEST with --ignore-known-bugs, so the
outcome is the kubelet's behaviour, not what the bug data expects. A release that cannot be built here
(403 on the proxy, no checksum entry) is skipped, as `git bisect skip` would.
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
from device_conformance.errors import BadInput
from device_conformance.expectations.versions import KubeVersion

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
    p.add_argument("--good", required=True, metavar="X.Y.Z", help="a release where TEST passes")
    p.add_argument("--bad", required=True, metavar="X.Y.Z", help="a release where TEST fails")
    p.add_argument("--out", type=Path, default=Path("bisect-results"), help="results folder")
    p.set_defaults(func=_run)


def releases_between(
    older: KubeVersion, newer: KubeVersion, exists: Callable[[KubeVersion], bool]
) -> list[KubeVersion]:
    """older, every release the proxy serves strictly between, newer (ascending)."""
    found = [older]
    for minor in range(older.minor, newer.minor + 1):
        patch = older.patch + 1 if minor == older.minor else 0
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


def search(
    releases: list[KubeVersion], outcome: Callable[[KubeVersion], str], say: Callable[[str], None]
) -> KubeVersion:
    """The first release (after the first) whose outcome is the last release's; assumes one change."""
    first, last = outcome(releases[0]), outcome(releases[-1])
    say(f"{releases[0]}: {first}   {releases[-1]}: {last}")
    if UNTESTABLE in (first, last) or first == last:
        raise BadInput(
            f"the endpoints give {first} on {releases[0]} and {last} on {releases[-1]}",
            "give a --good release where the test passes and a --bad one where it fails",
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


def run_outcome(test: str, version: KubeVersion, folder: Path) -> str:
    if release_run.setup(version, folder) != 0:
        return UNTESTABLE
    _, junit = release_run.pytest(version, folder, test, "--ignore-known-bugs")
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
    releases = releases_between(older, newer, proxy_serves)
    print(f"[bisect] {len(releases)} releases from {older} to {newer}: {', '.join(map(str, releases))}", flush=True)
    steps: list[dict[str, str]] = []

    def outcome(version: KubeVersion) -> str:
        result = run_outcome(args.test, version, args.out / str(version))
        steps.append({"release": str(version), "outcome": result})
        return result

    answer = search(releases, outcome, lambda line: print(f"[bisect] {line}", flush=True))
    change = "fixed" if newer == good else "broken"
    print(f"[bisect] first release where {args.test} is {change}: {answer}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "bisect.json").write_text(json.dumps({"test": args.test, "answer": str(answer), "steps": steps}))
    return 0
