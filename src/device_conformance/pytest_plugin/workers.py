"""How many xdist workers (one cluster each) a run gets with `-n auto`: the rule, from cores and memory.

A worker's tests spend most of their time waiting on the kubelet (restarts, status updates, the
endpoint grace period, DRA's retry at the pod resync), so cores are not the limit one per worker. The
whole suite (173 tests) on this project's 2-core CI machine, 2026-11-24, local clusters: 3 workers
16m40s, 5 workers 11m08s with the CPU 64% idle on average, 8 workers 8m49s with it still 54% idle
(vmstat every 10 s). So a local cluster gets a quarter of a core. A kind node (systemd, its own
containerd and control plane in a container) costs more at rest, so kind keeps one per core plus one.
Memory is a hard limit: a local cluster (etcd, kube-apiserver, controller-manager, scheduler,
containerd, kubelet) used 722 MiB RSS here, its pytest worker, fakes and pods about 150 MiB more.

    workers = max(1, min(per_core(provider, spare), (MemAvailable - 2 GiB) // 1 GiB, 8))
    per_core: local floor(4 * spare), kind floor(spare) + 1
    spare = max(0, min(cores, CPU quota) - max(0, busy - 0.25))

The cores are those this process may use: its affinity, and its cgroup's CPU quota (cgroup v2 cpu.max, v1
cpu.cfs_quota_us / cpu.cfs_period_us): a container limited to 1.5 CPUs on a 16-core host has 1.5. What the
machine already does counts too: a 2-core machine at load 8.7 (another build) starved the clusters' starts
in the field. `busy` is the CPU time the machine spends now, in cores, sampled from /proc/stat over one
second as the run starts (the pytest controller sleeps meanwhile); a quarter of a core of it (daemons, this
run's own start) costs nothing. Not the load average: it trails the last minute, so a run started right
after a build or another test step (`.ci/run` runs `make test` just before) would count work already done.
The 1-minute load is still printed, for the record. An idle machine keeps the answer it had.

E2E_WORKERS=N (0: no xdist) overrides the rule (docs/running.md, "Parallel runs"); a cluster every worker would share
(--provider existing, --kind-cluster) gets 1, since its tests run in turn anyway (xdist_groups.py).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.settings import PROVIDER_CAPABILITIES

MEMORY_PER_WORKER_MIB = 1024
MEMORY_RESERVE_MIB = 2048
MAX_WORKERS = 8
IDLE_BUSY = 0.25  # cores an idle machine (and this run's own start) keeps busy without taking from the clusters
BUSY_SAMPLE_SECONDS = 1.0
CGROUP_ROOT = Path("/sys/fs/cgroup")
WORKERS_ENV = "E2E_WORKERS"


def available_memory_mib(meminfo: Path = Path("/proc/meminfo")) -> int:
    """MemAvailable in MiB (what can be used without swapping), 0 when unknown."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def load_average(loadavg: Path = Path("/proc/loadavg")) -> float:
    """The 1-minute load average; 0.0 when unknown."""
    try:
        return float(loadavg.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def cpu_times(stat: Path = Path("/proc/stat")) -> tuple[int, int] | None:
    """(busy, total) jiffies of all CPUs from /proc/stat's first line; idle and iowait are not busy."""
    try:
        fields = [int(v) for v in stat.read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields) - idle, sum(fields)


def busy_cores(seconds: float = BUSY_SAMPLE_SECONDS, stat: Path = Path("/proc/stat")) -> float:
    """How many of the machine's cores are busy right now, over a `seconds` sample; 0.0 when unknown."""
    before = cpu_times(stat)
    time.sleep(seconds)
    after = cpu_times(stat)
    if before is None or after is None or after[1] <= before[1]:
        return 0.0
    return (os.cpu_count() or 1) * (after[0] - before[0]) / (after[1] - before[1])


def cpu_quota(root: Path = CGROUP_ROOT, self_cgroup: Path = Path("/proc/self/cgroup")) -> float | None:
    """CPUs this process's cgroup may use (quota / period), None without a quota. cgroup v2 `cpu.max`
    ("max 100000" or "150000 100000"), else v1 `cpu.cfs_quota_us` (-1: none) / `cpu.cfs_period_us`; read
    in the process's own cgroup and every parent, the smallest wins."""
    try:
        lines = self_cgroup.read_text().splitlines()
    except OSError:
        return None
    limits = []
    for line in lines:
        hierarchy, controllers, path = line.split(":", 2)
        if hierarchy == "0":
            directory, v1 = root if (root / "cgroup.controllers").exists() else root / "unified", False
        elif "cpu" in controllers.split(","):
            directory, v1 = root / "cpu", True
            if not directory.exists():
                directory = root / controllers
        else:
            continue
        parts = [p for p in path.split("/") if p]
        for depth in range(len(parts), -1, -1):
            limit = _quota_in(directory.joinpath(*parts[:depth]), v1)
            if limit is not None:
                limits.append(limit)
    return min(limits) if limits else None


def _quota_in(directory: Path, v1: bool) -> float | None:
    try:
        if v1:
            quota = int((directory / "cpu.cfs_quota_us").read_text())
            period = int((directory / "cpu.cfs_period_us").read_text())
        else:
            raw_quota, raw_period = (directory / "cpu.max").read_text().split()
            if raw_quota == "max":
                return None
            quota, period = int(raw_quota), int(raw_period)
    except (OSError, ValueError):
        return None
    return quota / period if quota > 0 and period > 0 else None


@dataclass(frozen=True)
class Machine:
    """What the rule reads: cores (affinity), the cgroup's CPU quota, the busy cores now, MemAvailable, and the
    1-minute load (printed only)."""

    cores: int
    quota: float | None
    busy: float
    memory_mib: int
    load1: float = 0.0

    @classmethod
    def read(cls) -> Machine:
        return cls(usable_cores(), cpu_quota(), busy_cores(), available_memory_mib(), load_average())


@dataclass(frozen=True)
class Choice:
    workers: int
    reason: str

    def header_line(self) -> str:
        return f"  workers (-n auto): {self.workers}: {self.reason}"


CHOICE_KEY = pytest.StashKey[Choice]()


def spare_cores(machine: Machine) -> float:
    """Cores the clusters can have: the usable ones (quota-bound) less what is busy beyond an idle machine."""
    usable = machine.cores if machine.quota is None else min(machine.cores, machine.quota)
    return max(0.0, usable - max(0.0, machine.busy - IDLE_BUSY))


def choose(machine: Machine, provider: str = "local") -> Choice:
    """The rule above, with the reason in words (the report header prints it)."""
    spare = spare_cores(machine)
    can = PROVIDER_CAPABILITIES[provider]
    by_cores = math.floor(can.workers_per_spare_core * spare) + can.extra_workers
    by_memory = (machine.memory_mib - MEMORY_RESERVE_MIB) // MEMORY_PER_WORKER_MIB
    workers = max(1, min(by_cores, by_memory, MAX_WORKERS))
    quota = "no CPU quota" if machine.quota is None else f"CPU quota {machine.quota:g}"
    per_core = f"{can.workers_per_spare_core} x {spare:.2f}" if can.workers_per_spare_core != 1 else f"{spare:.2f}"
    per_core += f" + {can.extra_workers}" if can.extra_workers else ""
    reason = (
        f"{machine.cores} cores, {quota}, {machine.busy:.2f} busy now (load {machine.load1:.2f}, 1 min): "
        f"{spare:.2f} spare cores; "
        f"{machine.memory_mib / 1024:.1f} GiB available -> max(1, min({per_core} = {by_cores} by CPU, "
        f"{by_memory} by memory, {MAX_WORKERS}))"
    )
    return Choice(workers, reason)


def workers_for(
    cores: int, memory_mib: int, provider: str = "local", *, busy: float = 0.0, quota: float | None = None
) -> int:
    """The rule above: 4 local clusters a spare core (kind: spare cores + 1), bounded by memory (2 GiB left to
    the rest of the machine) and 8."""
    return choose(Machine(cores, quota, busy, memory_mib), provider).workers


def requested_workers(environ: dict[str, str] | os._Environ[str]) -> int | None:
    """E2E_WORKERS as a count (0: no xdist, the tests run in the pytest process), None when unset or auto."""
    raw = environ.get(WORKERS_ENV, "").strip()
    if not raw or raw == "auto":
        return None
    if not raw.isdigit():
        raise BadInput(
            f"{WORKERS_ENV}={raw!r} is not a number of xdist workers",
            f"set {WORKERS_ENV} to a count (0 runs without xdist), or unset it to let the rule choose",
        )
    return int(raw)


def auto_choice(
    environ: dict[str, str] | os._Environ[str] = os.environ, provider: str = "local", machine: Machine | None = None
) -> Choice:
    """The worker count `-n auto` gets, and why."""
    requested = requested_workers(environ)
    if requested is not None:
        return Choice(requested, f"{WORKERS_ENV}={requested}")
    return choose(machine or Machine.read(), provider)


def auto_workers(environ: dict[str, str] | os._Environ[str] = os.environ, provider: str = "local") -> int:
    return auto_choice(environ, provider).workers
