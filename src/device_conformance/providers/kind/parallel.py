"""Many clusters on one host (one per xdist worker): names, and staggered creation.

Creating several kind clusters at once makes CRI slow to come up (kind#1288: "stagger, e.g. 2 then
2"), and concurrent first-time creation races on `docker network create kind` (kind#1663). So a
host-wide semaphore of file locks admits KIND_PARALLEL_CREATES creations at a time (default 2), and
while kind's network does not exist yet, creation is exclusive.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.host.dockercli import Docker

KIND_NETWORK = "kind"
# kind warns above 50 characters (clusterNameMax): node hostnames derive from the name.
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9.-]{0,49}$")


def cluster_name(worker: str | None = None, run_uid: str | None = None) -> str:
    """`dc-<run>-<worker>`: unique per test run and per xdist worker."""
    worker = worker or os.environ.get("PYTEST_XDIST_WORKER") or "main"
    run_uid = (run_uid or os.environ.get("PYTEST_XDIST_TESTRUNUID") or secrets.token_hex(3))[:6].lower()
    return f"dc-{run_uid}-{worker}".lower()


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise BadInput(
            f"{name!r} is not a usable kind cluster name",
            "use at most 50 characters from a-z, 0-9, '.' and '-' (kind derives node hostnames from it)",
        )
    return name


def parallel_creates() -> int:
    value = os.environ.get("KIND_PARALLEL_CREATES", "2")
    if not value.isdigit() or int(value) < 1:
        raise BadInput(f"KIND_PARALLEL_CREATES={value!r} is not a positive number", "e.g. KIND_PARALLEL_CREATES=2")
    return int(value)


@contextlib.contextmanager
def _flock(path: Path, *, blocking: bool) -> Iterator[bool]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@contextlib.contextmanager
def creation_slot(
    lock_dir: Path, docker: Docker, log: Callable[[str], None] = lambda _: None, slots: int | None = None
) -> Iterator[None]:
    """Hold one of `slots` creation slots (and the network lock while kind's network is missing)."""
    slots = slots or parallel_creates()
    waited_since = time.monotonic()
    announced = False
    while True:
        for index in range(slots):
            with _flock(lock_dir / f"create-{index}.lock", blocking=False) as held:
                if not held:
                    continue
                if announced:
                    log(f"creation slot free after {time.monotonic() - waited_since:.0f}s")
                with _flock(lock_dir / "network.lock", blocking=True):
                    if _network_exists(docker):
                        network_lock_needed = False
                    else:
                        network_lock_needed = True
                        log("kind's docker network does not exist yet: this creation runs alone")
                        yield
                if not network_lock_needed:
                    yield
                return
        if not announced:
            log(f"{slots} kind clusters are being created already; waiting for a slot (KIND_PARALLEL_CREATES)")
            announced = True
        time.sleep(1)


def _network_exists(docker: Docker) -> bool:
    return docker.run(["network", "inspect", KIND_NETWORK], check=False, timeout=60).returncode == 0
