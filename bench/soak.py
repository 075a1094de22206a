"""The flake check: the whole suite run again and again (docs/benchmarks.md, "Flake check").

    make soak SOAK_RUNS=10                       # the whole suite, slow tests included, ten times in a row
    .venv/bin/python bench/soak.py --runs 3 --marks "not slow" --workers 2

Each run is `pytest suites -n WORKERS --dist loadgroup` with a tag of its own in the environment
(providers/local/inventory.py TAG_ENV, inherited by everything it starts), so what it starts is told
apart from other sessions' clusters on the machine. After each run the check records:

1. its outcome from the JUnit XML: passed / failed / error / xfailed / skipped and the wall time, and
   each failed test with the first line of its message (the flakes to fix); and from its output, the
   workers whose cluster came up only at a second bring-up (green, but flagged: the machine or the harness
   lost a race there) or never (pytest_plugin/bringup_report.py's closing section);
2. what of ours is left on the host: the inventory (processes, mounts, cgroups, network namespaces,
   bridges and veths, iptables rules, sockets, run directories) diffed against a snapshot taken before
   the first run, keeping only items marked with the run's tag or with the ids of the clusters its
   workers owned (polled from the runs' state files while it ran).

The table goes to the terminal and, with the failures, to bench/results/soak-<time>.{md,json}; the exit
status is 1 when any run failed or left something behind. `--stop-on-failure` stops at the first such run.

`--neighbour burn:N` (N processes spinning at normal priority, 1 to 64) and `--neighbour go-build` (the node
agent's `go build -a` in a loop, with a build cache of its own) put CPU load beside each run, to shake out the
flakes a busy machine brings. A neighbour starts just before its run and is stopped, its whole process group,
when the run ends, also on Ctrl-C, SIGTERM or an error of the soak; its processes die with the soak even when
that is SIGKILLed (PR_SET_PDEATHSIG), and carry the run's tag, so one left behind shows in "left behind".
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from device_conformance.host.process import run_passing_interrupts
from device_conformance.providers.local import inventory
from device_conformance.providers.local.layout import state_root
from device_conformance.providers.local.processes import read_environ

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
OUTCOMES = ("passed", "failed", "error", "xfailed", "skipped")
POLL_S = 2.0  # how often the runs' state files are read for their owners (a cluster lives for minutes)


@dataclass
class RunResult:
    index: int
    returncode: int
    wall_s: float
    counts: dict[str, int]
    failures: list[str] = field(default_factory=list)  # "nodeid: first line of the message"
    left: list[str] = field(default_factory=list)
    clusters: list[str] = field(default_factory=list)  # the local clusters its workers owned
    bringups: list[str] = field(default_factory=list)  # "gw2 recovered at bring-up 2", "gw1 gave up"

    @property
    def green(self) -> bool:
        return self.returncode == 0 and not self.failures and not self.left


def junit_outcomes(path: Path) -> tuple[dict[str, int], list[str]]:
    """Counts per outcome and the failed tests of a pytest JUnit XML file.

    pytest writes an xfail as <skipped type="pytest.xfail">, and a strict xfail that passed as <failure>."""
    counts = dict.fromkeys(OUTCOMES, 0)
    failures = []
    for case in ET.parse(path).getroot().iter("testcase"):
        nodeid = f"{case.get('classname')}::{case.get('name')}"
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            element = case.find(tag)
            if element is None:
                continue
            outcome = "failed" if tag == "failure" else tag
            if tag == "skipped" and element.get("type") == "pytest.xfail":
                outcome = "xfailed"
            if tag in ("failure", "error"):
                message = (element.get("message") or element.text or "").strip().splitlines()
                failures.append(f"{nodeid}: {message[0][:200] if message else '(no message)'}")
            break
        counts[outcome] += 1
    return counts, failures


# The closing section pytest_plugin/bringup_report.py writes (its SECTION; bench/ may not import the plugin, and
# tests/bench/test_soak.py holds the two equal), one line per worker outcome after its failed bring-ups.
SECTION = "cluster bring-ups that failed"
_RECOVERED = re.compile(r"^(\w+): cluster up at bring-up (\d+); the worker went on$")
_GAVE_UP = re.compile(r"^(\w+): gave up on its cluster;")


def bringup_outcomes(output: str) -> list[str]:
    """The workers of a run whose cluster needed a second bring-up, from its output's closing section."""
    if f"= {SECTION} =" not in output:
        return []
    section = output.split(f"= {SECTION} =", 1)[1]
    found = []
    for line in section.splitlines():
        if m := _RECOVERED.match(line):
            found.append(f"{m[1]} recovered at bring-up {m[2]}")
        elif m := _GAVE_UP.match(line):
            found.append(f"{m[1]} gave up")
        elif line.startswith("=") and found:
            break  # the next section
    return found


class ClusterOwners:
    """The ids of the local clusters whose owner process carries `tag`, read from the runs' state files."""

    def __init__(self, tag: str) -> None:
        self.entry = f"{inventory.TAG_ENV}={tag}".encode()  # as it stands in /proc/PID/environ
        self.run_ids: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> ClusterOwners:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.read_once()

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            self.read_once()

    def read_once(self) -> None:
        for state_file in (state_root() / "runs").glob("*/state.json"):
            run_id = state_file.parent.name
            if run_id in self.run_ids:
                continue
            try:
                owner = json.loads(state_file.read_text()).get("owner_pid")
            except (OSError, ValueError):
                continue
            if owner and self.entry in read_environ(Path(f"/proc/{owner}")).split(b"\0"):
                self.run_ids.add(run_id)


# ---- CPU neighbours -------------------------------------------------------------------------------------
MAX_BURNERS = 64
NEIGHBOUR_STOP_GRACE_S = 5.0
PR_SET_PDEATHSIG = 1
# An endless loop of the node agent's build: -a recompiles the standard library each time (real compiler work,
# not a cache hit); its own GOCACHE and GOTMPDIR live in the neighbour's directory, removed when it stops.
GO_BUILD_LOOP = 'while :; do "$0" build -a -trimpath -o /dev/null . >/dev/null 2>&1 || sleep 1; done'


def parse_neighbour(spec: str) -> tuple[str, int]:
    """`burn:N` -> ("burn", N); `go-build` -> ("go-build", 1). Raises ValueError naming what is accepted."""
    kind, _, count = spec.partition(":")
    if kind == "go-build" and not count:
        return kind, 1
    if kind == "burn" and count.isdigit() and 1 <= int(count) <= MAX_BURNERS:
        return kind, int(count)
    raise ValueError(f"--neighbour {spec!r}: use burn:N (N from 1 to {MAX_BURNERS}) or go-build")


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL when the soak dies, however it dies (a SIGKILL skips every finally)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


class Neighbour:
    """CPU load beside a run, in a process group of its own: started by start(), gone after stop()."""

    def __init__(self, spec: str, tag: str = "") -> None:
        self.spec = spec
        self.kind, self.count = parse_neighbour(spec)
        self.env = {**os.environ, inventory.TAG_ENV: tag} if tag else dict(os.environ)
        self.processes: list[subprocess.Popen[bytes]] = []
        self.directory: Path | None = None

    @property
    def pgid(self) -> int | None:
        return self.processes[0].pid if self.processes else None

    def start(self) -> None:
        if self.kind == "burn":
            for _ in range(self.count):
                self._spawn([sys.executable, "-c", "while True: pass"])
        else:
            self._start_go_build()

    def _spawn(self, argv: list[str], cwd: Path | None = None) -> None:
        # A group of its own (the first process leads it), in the soak's session: a setpgid across sessions fails.
        group = self.pgid if self.processes else 0
        self.processes.append(
            subprocess.Popen(
                argv,
                cwd=cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                preexec_fn=_die_with_parent,  # fork-safe: only the ClusterOwners thread runs, and not yet
                process_group=group,
            )
        )

    def _start_go_build(self) -> None:
        from device_conformance.providers.agent.image import GO_MOD, SOURCE

        go = shutil.which("go")
        if go is None:
            raise ValueError("--neighbour go-build: no `go` on PATH")
        self.directory = Path(tempfile.mkdtemp(prefix="dc-soak-neighbour-"))
        (self.directory / "go.mod").write_text(GO_MOD)
        shutil.copy(SOURCE, self.directory / "agent.go")
        for name in ("cache", "tmp"):
            (self.directory / name).mkdir()
        self.env.update(
            GOCACHE=str(self.directory / "cache"),
            GOTMPDIR=str(self.directory / "tmp"),
            GOTOOLCHAIN="local",
            GOFLAGS="-mod=mod",
            CGO_ENABLED="0",
        )
        self._spawn(["sh", "-c", GO_BUILD_LOOP, go], cwd=self.directory)

    def stop(self) -> None:
        """SIGTERM to the whole group, SIGKILL to what is left after the grace; then the directory goes."""
        pgid = self.pgid
        if pgid is not None:
            _signal_group(pgid, signal.SIGTERM)
            deadline = time.monotonic() + NEIGHBOUR_STOP_GRACE_S
            while _group_alive(pgid, self.processes) and time.monotonic() < deadline:
                time.sleep(0.05)
            _signal_group(pgid, signal.SIGKILL)
            for process in self.processes:
                process.wait()
            while _group_alive(pgid, self.processes):  # the compiler of a go build, reparented: SIGKILLed above
                time.sleep(0.02)
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __str__(self) -> str:
        pids = " ".join(str(process.pid) for process in self.processes)
        return f"{self.spec} (process group {self.pgid}: {pids})"


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int, children: Sequence[subprocess.Popen[bytes]]) -> bool:
    """A process of the group is still there; our own children count once they are reaped, not as zombies."""
    for process in children:
        process.poll()
    return any(_pgid_of(pid) == pgid for pid in _pids())


def _pids() -> list[int]:
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]


def _pgid_of(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[2])  # state, ppid, pgrp


@contextmanager
def neighbours(specs: Sequence[str], tag: str = "", say: Callable[[str], None] = print) -> Iterator[list[Neighbour]]:
    """The neighbours running for the body; every one stopped on the way out, however the body ends."""
    with ExitStack() as stack:
        started = []
        for spec in specs:
            neighbour = Neighbour(spec, tag)
            stack.callback(neighbour.stop)  # before start(): a failed start leaves nothing either
            neighbour.start()
            say(f"neighbour {neighbour}")
            started.append(neighbour)
        yield started


def one_run(index: int, args: argparse.Namespace, logs: Path, before: inventory.Snapshot) -> RunResult:
    tag = f"soak-{os.getpid()}-{index}"
    junit = logs / f"run-{index:02d}.xml"
    argv = [sys.executable, "-m", "pytest", "suites", "-p", "no:cacheprovider", "-q", "-rfE", f"--junitxml={junit}"]
    argv += ["-n", str(args.workers), "--dist", "loadgroup"]
    if args.marks:
        argv += ["-m", args.marks]
    argv += args.pytest_args
    env = {**os.environ, inventory.TAG_ENV: tag}
    with neighbours(args.neighbour, tag):  # stopped before the inventory below looks for what is left
        started = time.monotonic()
        with ClusterOwners(tag) as owners, (logs / f"run-{index:02d}.log").open("wb") as log:
            code = run_passing_interrupts(argv, cwd=ROOT, env=env, stdout=log)
        wall = time.monotonic() - started
    if junit.exists():
        counts, failures = junit_outcomes(junit)
    else:
        counts = dict.fromkeys(OUTCOMES, 0)
        failures = [f"(no JUnit XML: pytest exited {code}; see {logs / f'run-{index:02d}.log'})"]
    ours = inventory.Ours(run_ids=frozenset(owners.run_ids), tags=frozenset({tag}))
    left = [str(item) for item in inventory.leaks(before, inventory.snapshot(), ours)]
    output = (logs / f"run-{index:02d}.log").read_text(errors="replace")
    return RunResult(index, code, wall, counts, failures, left, sorted(owners.run_ids), bringup_outcomes(output))


def table(results: list[RunResult]) -> str:
    lines = [
        "| run | exit | wall | passed | failed | error | xfailed | skipped | left behind | bring-ups retried |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        cells = " | ".join(str(r.counts[o]) for o in OUTCOMES)
        retried = ", ".join(r.bringups) or "none"
        lines.append(
            f"| {r.index} | {r.returncode} | {r.wall_s:.0f} s | {cells} | {len(r.left) or 'nothing'} | {retried} |"
        )
    failed = [(r.index, f) for r in results for f in r.failures]
    if failed:
        lines += ["", "Failures:", *(f"- run {index}: {line}" for index, line in failed)]
    left = [(r.index, item) for r in results for item in r.left]
    if left:
        lines += ["", "Left behind:", *(f"- run {index}: {item}" for index, item in left)]
    return "\n".join(lines)


def _sigterm_as_interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--workers", default="auto", help="xdist workers per run (one cluster each)")
    parser.add_argument("--marks", default="", help="a -m expression (default: the whole suite, slow included)")
    parser.add_argument("--stop-on-failure", action="store_true")
    parser.add_argument(
        "--neighbour",
        action="append",
        default=[],
        metavar="burn:N|go-build",
        help="CPU load beside each run: N spinning processes, or the node agent's Go build in a loop (repeatable)",
    )
    parser.add_argument("pytest_args", nargs="*", help="more pytest arguments (after --)")
    args = parser.parse_args()
    for spec in args.neighbour:
        try:
            parse_neighbour(spec)
        except ValueError as exc:
            parser.error(str(exc))
    # make or CI stop with SIGTERM: as Ctrl-C, so the run's neighbours are stopped on the way out.
    signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"soak-{stamp}"
    logs.mkdir(parents=True, exist_ok=True)
    beside = f"; neighbours {', '.join(args.neighbour)}" if args.neighbour else ""
    print(
        f"soak: {args.runs} runs of `pytest suites -n {args.workers}` -m {args.marks!r}{beside}; logs in {logs}",
        flush=True,
    )
    before = inventory.snapshot()
    results: list[RunResult] = []
    for index in range(1, args.runs + 1):
        result = one_run(index, args, logs, before)
        results.append(result)
        counts = ", ".join(f"{n} {o}" for o, n in result.counts.items() if n)
        print(f"[{index}/{args.runs}] exit {result.returncode}, {counts} in {result.wall_s:.0f} s; "
              f"clusters {result.clusters}; left: {len(result.left)}", flush=True)  # fmt: skip
        for line in result.failures + result.left:
            print(f"    {line}", flush=True)
        (RESULTS / f"soak-{stamp}.json").write_text(
            json.dumps({"args": vars(args), "runs": [asdict(r) for r in results]}, indent=1)
        )
        if args.stop_on_failure and not result.green:
            break
    report = table(results)
    (RESULTS / f"soak-{stamp}.md").write_text(report + "\n")
    print(report)
    return 0 if results and all(r.green for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
