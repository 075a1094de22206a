"""How many xdist workers (one cluster each) a run gets with `-n auto`: the rule, from cores and memory.

A worker's tests spend most of their time waiting on the kubelet (restarts, status updates, the
endpoint grace period, DRA's retry at the pod resync), so cores are not the limit one per worker. The
whole suite (173 tests) on this project's 2-core CI machine, 2026-11-24, local clusters: 3 workers
16m40s, 5 workers 11m08s with the CPU 64% idle on average, 8 workers 8m49s with it still 54% idle
(vmstat every 10 s). So a local cluster gets a quarter of a core. A kind node (systemd, its own
containerd and control plane in a container) costs more at rest, so kind keeps one per core plus one.
Memory is a hard limit: a local cluster (etcd, kube-apiserver, controller-manager, scheduler,
containerd, kubelet) used 722 MiB RSS here, its pytest worker, fakes and pods about 150 MiB more.

    workers = max(1, min(per_core(provider, cores), (MemAvailable - 2 GiB) // 1 GiB, 8))
    per_core: local 4 * cores, kind cores + 1

E2E_WORKERS=N (0: no xdist) overrides the rule (README, "Parallel runs"); a cluster every worker would share
(--provider existing, --kind-cluster) gets 1, since its tests run in turn anyway (xdist_groups.py).
"""

from __future__ import annotations

import os
from pathlib import Path

from device_conformance.errors import BadInput

MEMORY_PER_WORKER_MIB = 1024
MEMORY_RESERVE_MIB = 2048
MAX_WORKERS = 8
LOCAL_WORKERS_PER_CORE = 4  # measured: see above
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


def workers_for(cores: int, memory_mib: int, provider: str = "local") -> int:
    """The rule above: 4 local clusters a core (kind: cores + 1), bounded by memory (2 GiB left to the rest
    of the machine) and 8."""
    by_cores = LOCAL_WORKERS_PER_CORE * cores if provider == "local" else cores + 1
    by_memory = (memory_mib - MEMORY_RESERVE_MIB) // MEMORY_PER_WORKER_MIB
    return max(1, min(by_cores, by_memory, MAX_WORKERS))


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


def auto_workers(environ: dict[str, str] | os._Environ[str] = os.environ, provider: str = "local") -> int:
    requested = requested_workers(environ)
    if requested is not None:
        return requested
    return workers_for(usable_cores(), available_memory_mib(), provider)
