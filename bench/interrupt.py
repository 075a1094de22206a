"""Interruption and crash check of the local provider (docs/providers/local.md, "Interruption and crash").

    .venv/bin/python bench/interrupt.py [--seed N] [--only NAME,...] [--baseline FILE]

Runs pytest on a short selection (smoke, one device plugin and one DRA test) again and again, each time
interrupting it at one point of bring-up, of a test or of teardown: SIGINT to pytest's process group (what
Ctrl-C in a terminal sends) or SIGKILL to pytest alone (a crash). Each point waits for a trigger the harness
itself shows (the run's state.json naming a started component, a fake's socket in the run directory, a
container's log file, a test's line on pytest's output, a component gone in teardown), then a seeded random
delay (`--seed`, printed). After each interrupted run:

1. it diffs a snapshot of the host (providers/local/inventory.py: processes, mounts, cgroups, network
   namespaces, bridges and veths, iptables rules, sockets, ports, run directories) against the one taken
   before the first run, keeping only what carries the ids of *this check's* runs or the tag in their
   environment: other sessions' clusters on this machine never count;
2. it starts the next run (test_cluster.py), which must pass, and whose start-up must clean what a killed
   run left; every run it cleans must be one of ours;
3. it diffs again: nothing of ours may be left;
4. it checks that a cluster of another run, kept up the whole time by `device-conformance cluster up` in
   another process, still has the same processes and run directory.

The table goes to the terminal and, with each point's details, to bench/results/interrupt-<time>.{md,json}.
`--no-next-run` only interrupts and diffs, then cleans up itself (for a baseline of unfixed code), and
`--baseline FILE` adds a column "left before the fix" from such a run's JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from device_conformance.providers.local import inventory
from device_conformance.providers.local.layout import state_root
from device_conformance.providers.local.leftovers import clean_leftovers

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
PYTEST = ROOT / ".venv" / "bin" / "pytest"
CLI = ROOT / ".venv" / "bin" / "device-conformance"
SMOKE_POD = "test_pod_runs_to_completion_and_its_log_is_read"
DP_TEST = "test_registered_plugin_devices_become_capacity_and_allocatable"
DRA_TEST = "test_template_claim_is_prepared_and_unprepared_once"
SELECTION = [
    f"suites/smoke/test_cluster.py::{SMOKE_POD}",
    f"suites/device_plugin/test_registration.py::{DP_TEST}",
    f"suites/dra/test_dra_claim_lifecycle.py::{DRA_TEST}",
]
NEXT_RUN = ["suites/smoke/test_cluster.py"]
EXIT_TIMEOUT = 240.0  # a SIGINTed run that has not exited by then hangs: it is SIGKILLed and reported
RUN_TIMEOUT = 900.0
SETTLE = 3.0


# ---- one pytest run, watched ---------------------------------------------------------------------
class Watched:
    """A pytest process and what the harness shows of it: its output and its runs' state files."""

    def __init__(self, args: list[str], tag: str, log: Path) -> None:
        self.tag, self.log = tag, log
        env = {**os.environ, inventory.TAG_ENV: tag, "PYTHONUNBUFFERED": "1"}
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [str(PYTEST), *args, "-v", "-p", "no:cacheprovider"],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, as a terminal's foreground job
        )
        self.output = ""
        self.runs: dict[str, dict] = {}  # run id -> last state.json seen
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.log.open("wb") as out:
            while chunk := os.read(self.proc.stdout.fileno(), 65536):
                out.write(chunk)
                out.flush()
                self.output += chunk.decode(errors="replace")

    def poll_runs(self) -> None:
        for state_file in (state_root() / "runs").glob("*/state.json"):
            try:
                state = json.loads(state_file.read_text())
            except (OSError, ValueError):
                continue
            if state.get("owner_pid") == self.proc.pid:
                self.runs[state_file.parent.name] = state

    def state(self) -> dict:
        return next(iter(self.runs.values()), {})

    def run_dir(self) -> Path | None:
        return state_root() / "runs" / next(iter(self.runs)) if self.runs else None

    def process_alive(self, name: str) -> bool | None:
        """None: not started yet; else whether the recorded process lives."""
        record = self.state().get("processes", {}).get(name)
        if record is None:
            return None
        from device_conformance.providers.local.processes import ProcessRecord

        return ProcessRecord.from_dict(record).alive()

    def wait_exit(self, timeout: float) -> int | None:
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def finish(self) -> None:
        self._reader.join(10)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


# ---- the points -----------------------------------------------------------------------------------
Trigger = Callable[[Watched], bool]


def started(name: str) -> Trigger:
    return lambda w: w.process_alive(name) is True


def in_output(pattern: str) -> Trigger:
    regex = re.compile(pattern)
    return lambda w: bool(regex.search(w.output))


def glob_in_run(pattern: str) -> Trigger:
    def check(w: Watched) -> bool:
        run_dir = w.run_dir()
        return run_dir is not None and any(run_dir.glob(pattern))

    return check


def both(*triggers: Trigger) -> Trigger:
    return lambda w: all(t(w) for t in triggers)


def holder_spawned(w: Watched) -> bool:
    """The node's mount-namespace holder (`unshare --mount ... sleep infinity`, unshare execs sleep) is a child
    of pytest, and the run's state does not name it yet."""
    if w.state().get("namespace_holder"):
        return False
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            holder = cmdline.startswith(b"unshare\0--mount") or cmdline == b"sleep\0infinity\0"
            if holder and int(stat.rsplit(")", 1)[1].split()[1]) == w.proc.pid:
                return True
    return False


def kubelet_gone_in_teardown(w: Watched) -> bool:
    return in_output(rf"{DRA_TEST}\S* PASSED")(w) and w.process_alive("kubelet") is False


def passed(test: str) -> Trigger:
    return in_output(rf"{test}\S* PASSED")


def logstart(test: str) -> Trigger:
    return in_output(rf"::{test}\b")


def new_container_log_after(start: Trigger) -> Trigger:
    """A container log file that was not there when `start` first held (the kubelet removes a deleted pod's
    log directory, so counting files does not work)."""
    seen: dict[int, set[Path]] = {}

    def check(w: Watched) -> bool:
        run_dir = w.run_dir()
        if run_dir is None or not start(w):
            return False
        logs = set(run_dir.glob(CONTAINER_LOG))
        if id(w) not in seen:
            seen[id(w)] = logs
            return False
        return bool(logs - seen[id(w)])

    return check


@dataclass(frozen=True)
class Point:
    name: str
    phase: str
    sig: signal.Signals
    trigger: Trigger
    what: str
    jitter: float = 0.5  # the random delay after the trigger: uniform in [0, jitter] seconds


CONTAINER_LOG = "node/pod-logs/*/*/*.log"
POINTS = [
    Point("run-dir", "bring-up", signal.SIGINT, lambda w: bool(w.runs), "the run's state.json exists", 0.3),
    Point("etcd", "bring-up", signal.SIGINT, started("etcd"), "etcd recorded as started"),
    Point("apiserver", "bring-up", signal.SIGINT, started("kube-apiserver"), "kube-apiserver recorded as started"),
    Point("containerd", "bring-up", signal.SIGINT, started("containerd"), "containerd recorded as started", 1.0),
    Point("kubelet", "bring-up", signal.SIGINT, started("kubelet"), "kubelet recorded as started", 1.0),
    Point(
        "pod-running",
        "test",
        signal.SIGINT,
        both(logstart(SMOKE_POD), glob_in_run(CONTAINER_LOG)),
        "smoke test started, its container's log file exists",
        0.3,
    ),
    Point(
        "plugin-registered",
        "test",
        signal.SIGINT,
        both(logstart(DP_TEST), glob_in_run("node/kubelet/device-plugins/dc-*.sock")),
        "device plugin test started, the fake's socket is in the kubelet's directory",
    ),
    Point(
        "dra-driver-registered",
        "test",
        signal.SIGINT,
        both(logstart(DRA_TEST), glob_in_run("node/kubelet/plugins_registry/*.sock")),
        "DRA test started, the fake driver's registration socket exists",
    ),
    Point(
        "dra-pod-running",
        "test",
        signal.SIGINT,
        new_container_log_after(logstart(DRA_TEST)),
        "DRA test started, then its pod's container log file appeared",
        0.5,
    ),
    Point(
        "test-teardown",
        "teardown",
        signal.SIGINT,
        passed(DP_TEST),
        "the device plugin test PASSED: its fixtures (plugin, pods) are being torn down",
        0.3,
    ),
    Point(
        "session-teardown",
        "teardown",
        signal.SIGINT,
        passed(DRA_TEST),
        "the last test PASSED: driver teardown, then the session's fixtures (the cluster)",
        1.5,
    ),
    Point(
        "cluster-teardown",
        "teardown",
        signal.SIGINT,
        kubelet_gone_in_teardown,
        "all tests done and the kubelet stopped: the cluster's teardown is under way",
        0.2,
    ),
    Point(
        "holder", "bring-up", signal.SIGKILL, holder_spawned, "the node's mount-namespace holder was just spawned", 0.0
    ),
    Point("kill-kubelet", "bring-up", signal.SIGKILL, started("kubelet"), "kubelet recorded as started", 1.0),
    Point(
        "kill-dra",
        "test",
        signal.SIGKILL,
        both(logstart(DRA_TEST), glob_in_run("node/kubelet/plugins_registry/*.sock")),
        "DRA test started, the fake driver registered",
    ),
    Point(
        "kill-teardown",
        "teardown",
        signal.SIGKILL,
        kubelet_gone_in_teardown,
        "all tests done and the kubelet stopped: the cluster's teardown is under way",
        0.2,
    ),
]


# ---- the other run's cluster, kept alive through the check ---------------------------------------
@dataclass
class Keeper:
    run_id: str
    processes: dict[str, tuple[int, int]]

    @classmethod
    def start(cls, log: Path) -> Keeper:
        env = {**os.environ, inventory.TAG_ENV: "keeper"}
        with log.open("w") as out:
            subprocess.run(
                [str(CLI), "cluster", "up", "--provider", "local"],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=True,
            )
        run_id = re.search(r"kept cluster (r[0-9a-f]{6})", log.read_text()).group(1)
        return cls(run_id, cls._processes(run_id))

    @staticmethod
    def _processes(run_id: str) -> dict[str, tuple[int, int]]:
        state = json.loads((state_root() / "runs" / run_id / "state.json").read_text())
        return {name: (p["pid"], p["started"]) for name, p in state["processes"].items()}

    def intact(self) -> str:
        """'yes', or what was touched."""
        from device_conformance.providers.local.processes import ProcessRecord

        try:
            now = self._processes(self.run_id)
        except (OSError, ValueError) as exc:
            return f"state gone: {exc}"
        if now != self.processes:
            return f"processes changed: {now} != {self.processes}"
        state = json.loads((state_root() / "runs" / self.run_id / "state.json").read_text())
        dead = [n for n, p in state["processes"].items() if not ProcessRecord.from_dict(p).alive()]
        return f"dead: {dead}" if dead else "yes"

    def down(self) -> None:
        subprocess.run([str(CLI), "cluster", "down", "--provider", "local", self.run_id], cwd=ROOT, check=False)


# ---- the check --------------------------------------------------------------------------------------
@dataclass
class Result:
    point: str
    phase: str
    signal: str
    what: str
    trigger_at: float | None = None
    delay: float = 0.0
    exit: str = ""
    run_ids: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    gone_by_itself: list[str] = field(default_factory=list)  # SIGKILL: left at once, gone SETTLE s later
    next_result: str = ""
    next_cleaned: list[str] = field(default_factory=list)
    left_after_next: list[str] = field(default_factory=list)
    keeper: str = ""


def ours_of(tags: set[str], run_ids: set[str], ports: set[int]) -> inventory.Ours:
    return inventory.Ours(frozenset(run_ids), frozenset(tags), frozenset(ports))


def ports_of(state: dict) -> set[int]:
    return set(state.get("ports", {}).values())


def summary(line_output: str) -> str:
    found = re.findall(r"^=+ (.*(?:passed|failed|error|no tests ran|interrupted).*?) =+$", line_output, re.M)
    return found[-1] if found else "(no summary)"


def interrupted_run(point: Point, index: int, rng: random.Random, logs: Path, result: Result) -> Watched:
    watched = Watched(SELECTION, f"interrupt-{os.getpid()}-{index}", logs / f"{index:02d}-{point.name}.log")
    deadline = time.monotonic() + RUN_TIMEOUT
    while watched.proc.poll() is None and time.monotonic() < deadline:
        watched.poll_runs()
        if point.trigger(watched):
            result.trigger_at = round(watched.elapsed(), 1)
            result.delay = round(rng.uniform(0, point.jitter), 2)
            time.sleep(result.delay)
            watched.poll_runs()
            if point.sig == signal.SIGINT:
                os.killpg(watched.proc.pid, signal.SIGINT)  # as Ctrl-C: the whole foreground group
            else:
                os.kill(watched.proc.pid, signal.SIGKILL)  # a crash of pytest alone
            break
        time.sleep(0.02)
    code = watched.wait_exit(EXIT_TIMEOUT)
    if code is None:
        os.kill(watched.proc.pid, signal.SIGKILL)
        code = watched.proc.wait()
        result.exit = f"HUNG {EXIT_TIMEOUT:.0f}s after the signal, SIGKILLed"
    else:
        result.exit = f"rc {code}" if code >= 0 else f"killed ({signal.Signals(-code).name})"
    watched.finish()
    if result.trigger_at is None:
        result.exit += " (trigger never fired)"
    result.exit += f": {summary(watched.output)}" if code != -9 else ""
    result.run_ids = sorted(watched.runs)
    return watched


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--only", default="", help="comma-separated point names (default: all)")
    parser.add_argument("--no-next-run", action="store_true", help="baseline: interrupt, diff, clean up ourselves")
    parser.add_argument("--baseline", type=Path, help="JSON of a --no-next-run run: its leftovers as a column")
    parser.add_argument("--no-keeper", action="store_true", help="no other run's cluster kept up meanwhile")
    parser.add_argument("--render", type=Path, help="only print the table of an earlier run's JSON")
    args = parser.parse_args()
    # Started in the background (`nohup ... &`, CI), this process ignores SIGINT, and an ignored signal stays
    # ignored across exec: pytest would never see our Ctrl-C (the first try of this check got rc 0 at every
    # SIGINT point). With a Python handler here, children start with the default disposition.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.render:
        data = json.loads(args.render.read_text())
        baseline = {r["point"]: r for r in json.loads(args.baseline.read_text())["results"]} if args.baseline else {}
        print(_table(data["seed"], [Result(**{"gone_by_itself": [], **r}) for r in data["results"]], baseline))
        return 0
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    points = [p for p in POINTS if not args.only or p.name in args.only.split(",")]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    logs = RESULTS / f"interrupt-{stamp}"
    logs.mkdir(parents=True, exist_ok=True)
    print(f"interruption check: seed {seed}, {len(points)} points, logs in {logs}", flush=True)

    before = inventory.snapshot()
    keeper = None if args.no_keeper else Keeper.start(logs / "keeper.log")
    if keeper:
        print(f"kept another run's cluster up: {keeper.run_id} ({len(keeper.processes)} processes)", flush=True)
    tags: set[str] = set()
    all_runs: set[str] = set()
    all_ports: set[int] = set()
    results: list[Result] = []
    baseline = {r["point"]: r for r in json.loads(args.baseline.read_text())["results"]} if args.baseline else {}
    try:
        for index, point in enumerate(points, 1):
            result = Result(point.name, point.phase, point.sig.name, point.what)
            print(f"[{index}/{len(points)}] {point.name}: {point.sig.name} when {point.what}", flush=True)
            watched = interrupted_run(point, index, rng, logs, result)
            tags.add(watched.tag)
            all_runs |= set(watched.runs)
            for state in watched.runs.values():
                all_ports |= ports_of(state)
            ours = ours_of(tags, all_runs, all_ports)
            result.left = [str(i) for i in inventory.leaks(before, inventory.snapshot(), ours)]
            if point.sig == signal.SIGKILL:
                # Fakes notice their parent is gone by polling (0.2 s) and then stop their servers: give them
                # SETTLE seconds, and say what went in that time by itself.
                time.sleep(SETTLE)
                settled = [str(i) for i in inventory.leaks(before, inventory.snapshot(), ours)]
                result.gone_by_itself = [line for line in result.left if line not in settled]
                result.left = settled
            print(f"    exit {result.exit}; left: {len(result.left)}", flush=True)
            for line in result.left[:20]:
                print(f"      {line}", flush=True)
            if args.no_next_run:
                _clean_ourselves(tags, result)
            else:
                live_before = _live_runs()
                nxt = Watched(
                    NEXT_RUN, f"interrupt-{os.getpid()}-{index}-next", logs / f"{index:02d}-{point.name}-next.log"
                )
                code = nxt.wait_exit(RUN_TIMEOUT)
                if code is None:
                    os.kill(nxt.proc.pid, signal.SIGKILL)
                    nxt.proc.wait()
                nxt.finish()
                tags.add(nxt.tag)
                cleaned = re.findall(r"found run (r[0-9a-f]{6}) left by", nxt.output)
                # Another session's crashed run may be cleaned (that is the point); a live one never.
                touched = [c for c in cleaned if c in live_before]
                result.next_cleaned = [c if c in all_runs else f"{c} (another session's, crashed)" for c in cleaned]
                result.next_result = ("PASS " if code == 0 else f"FAIL rc {code} ") + summary(nxt.output)
                if touched:
                    result.next_result += f"; CLEANED LIVE RUNS {touched}"
                for run_dir in re.findall(r"cluster (r[0-9a-f]{6}) up in", nxt.output):
                    all_runs.add(run_dir)
                ours = ours_of(tags, all_runs, all_ports)
                result.left_after_next = [str(i) for i in inventory.leaks(before, inventory.snapshot(), ours)]
                print(f"    next run: {result.next_result}; cleaned {cleaned}; left: {len(result.left_after_next)}")
                for line in result.left_after_next[:20]:
                    print(f"      {line}", flush=True)
            result.keeper = keeper.intact() if keeper else "-"
            print(f"    other run's cluster intact: {result.keeper}", flush=True)
            results.append(result)
            _write(logs, stamp, seed, results, baseline)
    finally:
        if keeper:
            keeper.down()
    table = _write(logs, stamp, seed, results, baseline)
    print(table)
    if args.no_next_run:
        return 0
    bad = [r for r in results if r.left_after_next or (r.signal == "SIGINT" and r.left)]
    bad += [r for r in results if "FAIL" in r.next_result or "CLEANED LIVE" in r.next_result]
    bad += [r for r in results if r.keeper not in ("yes", "-")]
    return 1 if bad else 0


def _live_runs() -> set[str]:
    """Runs whose owner is alive or that were kept (what clean-up must never touch)."""
    from device_conformance.providers.local.leftovers import all_runs
    from device_conformance.providers.local.state import RunState

    live = set()
    for layout in all_runs():
        try:
            state = RunState.load(layout)
        except (OSError, ValueError, TypeError):
            continue
        if state.kept or state.owner_alive():
            live.add(layout.run_id)
    return live


def _clean_ourselves(tags: set[str], result: Result) -> None:
    """Baseline mode: remove what an unfixed harness left, so the next point starts clean."""
    from device_conformance.host.process import terminate

    for item in inventory.snapshot().of(ours_of(tags, set(), set())):
        if item.kind == "process":
            terminate(int(item.key.split(":")[0]), grace=5)
    clean_leftovers(lambda line: None)
    result.next_result = "(baseline: no next run; cleaned by the check)"


def _cell(lines: list[str]) -> str:
    """A leak list in a table cell: counts by kind, the processes by name (details in the JSON and the log)."""
    if not lines:
        return "nothing"
    kinds: dict[str, list[str]] = {}
    for line in lines:
        kind, _, rest = line.partition(" ")
        kinds.setdefault(kind, []).append(rest)
    parts = []
    for kind, rests in kinds.items():
        if kind == "process":
            names = sorted({_process_name(rest) for rest in rests})
            parts.append(f"{len(rests)} processes ({', '.join(names)})")
        elif kind == "run-dir":
            parts.append("the run directory")
        else:
            parts.append(f"{len(rests)} {kind}{'s' if len(rests) > 1 else ''}")
    return "; ".join(parts)


def _process_name(detail: str) -> str:
    """'pid 12: /x/kube-apiserver --flags' -> 'kube-apiserver'; a fake -> its module's last part."""
    argv = detail.split(": ", 1)[-1].split()
    if "-m" in argv[:-1]:
        return argv[argv.index("-m") + 1].rsplit(".", 1)[-1]
    return " ".join([Path(argv[0]).name, *argv[1:2]]) if argv and Path(argv[0]).name == "sleep" else Path(argv[0]).name


def _write(logs: Path, stamp: str, seed: int, results: list[Result], baseline: dict) -> str:
    table = _table(seed, results, baseline)
    (RESULTS / f"interrupt-{stamp}.md").write_text(table)
    (RESULTS / f"interrupt-{stamp}.json").write_text(
        json.dumps({"seed": seed, "results": [asdict(r) for r in results]}, indent=1)
    )
    return table


def _table(seed: int, results: list[Result], baseline: dict) -> str:
    header = "| # | point | phase | signal | trigger (s) + delay | interrupted run | left after it |"
    header += " left before the fix |" if baseline else ""
    header += " next run | left after the next run | other run's cluster intact |"
    rows = [header, "|" + "---|" * (header.count("|") - 1)]
    for n, r in enumerate(results, 1):
        trig = f"{r.trigger_at} + {r.delay}" if r.trigger_at is not None else "never"
        left = _cell(r.left) + (
            f" (gone by itself within {SETTLE:.0f} s: {_cell(r.gone_by_itself)})" if r.gone_by_itself else ""
        )
        row = f"| {n} | {r.point}: {r.what} | {r.phase} | {r.signal} | {trig} | {r.exit} | {left} |"
        if baseline:
            row += f" {_cell(baseline.get(r.point, {}).get('left', ['(not run)']))} |"
        cleaned = ", ".join(r.next_cleaned) or "none"
        row += f" {r.next_result} (cleaned {cleaned}) | {_cell(r.left_after_next)} | {r.keeper} |"
        rows.append(row)
    return f"seed {seed}\n\n" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    sys.exit(main())
