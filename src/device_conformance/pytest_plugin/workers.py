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
    spare = max(0, min(cores, CPU quota) - max(0, load1 - 1))

The cores are those this process may use: its affinity, and its cgroup's CPU quota (cgroup v2 cpu.max, v1
cpu.cfs_quota_us / cpu.cfs_period_us): a container limited to 1.5 CPUs on a 16-core host has 1.5. What the
machine already does counts too: a 2-core machine at load 8.7 (another build) starved the clusters' starts
in the field, so the 1-minute load average beyond one runnable task (the shell, the run's own collection)
is taken off. An idle machine keeps the answer it had (load below 1 costs nothing).

E2E_WORKERS=N (0: no xdist) overrides the rule (README, "Parallel runs"); a cluster every worker would share
(--provider existing, --kind-cluster) gets 1, since its tests run in turn anyway (xdist_groups.py).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from device_conformance.errors import BadInput

MEMORY_PER_WORKER_MIB = 1024
MEMORY_RESERVE_MIB = 2048
MAX_WORKERS = 8
LOCAL_WORKERS_PER_CORE = 4  # measured: see above
IDLE_LOAD = 1.0  # runnable tasks of an idle machine (and of this run) that take nothing from the clusters
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
    """What the rule reads: cores (affinity), the cgroup's CPU quota, the 1-minute load, MemAvailable."""

    cores: int
    quota: float | None
    load1: float
    memory_mib: int

    @classmethod
    def read(cls) -> Machine:
        return cls(usable_cores(), cpu_quota(), load_average(), available_memory_mib())


@dataclass(frozen=True)
class Choice:
    workers: int
    reason: str

    def header_line(self) -> str:
        return f"  workers (-n auto): {self.workers}: {self.reason}"


CHOICE_KEY = pytest.StashKey[Choice]()


def spare_cores(machine: Machine) -> float:
    """Cores the clusters can have: the usable ones (quota-bound) less the load beyond an idle machine's."""
    usable = machine.cores if machine.quota is None else min(machine.cores, machine.quota)
    return max(0.0, usable - max(0.0, machine.load1 - IDLE_LOAD))


def choose(machine: Machine, provider: str = "local") -> Choice:
    """The rule above, with the reason in words (the report header prints it)."""
    spare = spare_cores(machine)
    by_cores = math.floor(LOCAL_WORKERS_PER_CORE * spare) if provider == "local" else math.floor(spare) + 1
    by_memory = (machine.memory_mib - MEMORY_RESERVE_MIB) // MEMORY_PER_WORKER_MIB
    workers = max(1, min(by_cores, by_memory, MAX_WORKERS))
    quota = "no CPU quota" if machine.quota is None else f"CPU quota {machine.quota:g}"
    per_core = f"{LOCAL_WORKERS_PER_CORE} x {spare:.2f}" if provider == "local" else f"{spare:.2f} + 1"
    reason = (
        f"{machine.cores} cores, {quota}, load {machine.load1:.2f} (1 min): {spare:.2f} spare cores; "
        f"{machine.memory_mib / 1024:.1f} GiB available -> max(1, min({per_core} = {by_cores} by CPU, "
        f"{by_memory} by memory, {MAX_WORKERS}))"
    )
    return Choice(workers, reason)


def workers_for(
    cores: int, memory_mib: int, provider: str = "local", *, load1: float = 0.0, quota: float | None = None
) -> int:
    """The rule above: 4 local clusters a spare core (kind: spare cores + 1), bounded by memory (2 GiB left to
    the rest of the machine) and 8."""
    return choose(Machine(cores, quota, load1, memory_mib), provider).workers


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
