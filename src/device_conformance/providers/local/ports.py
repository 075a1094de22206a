"""Loopback ports for a local cluster: a block of PORTS_PER_RUN ports per run, never shared."""

from __future__ import annotations

import fcntl
import os
import socket
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput

FIRST_PORT = 21000
PORTS_PER_RUN = 10
MAX_BLOCKS = 400
BASE_PORT_ENV = "DEVICE_CONFORMANCE_BASE_PORT"


@dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kubelet: int
    kubelet_healthz: int

    @classmethod
    def from_base(cls, base: int) -> Ports:
        return cls(*range(base, base + 7))

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pinned_block() -> Ports | None:
    """The block DEVICE_CONFORMANCE_BASE_PORT pins, checked free; None when it is not set.

    Called before anything is built or started (LocalProvider), so a busy port stops a run at once
    rather than after a build, and again when the cluster takes the block."""
    pinned = os.environ.get(BASE_PORT_ENV, "").strip()
    if not pinned:
        return None
    try:
        base = int(pinned)
    except ValueError:
        base = -1
    if not 1024 <= base <= 65535 - PORTS_PER_RUN:
        raise BadInput(
            f"{BASE_PORT_ENV}={pinned!r} is not a port number for a block of {PORTS_PER_RUN} ports",
            f"set it to a number from 1024 to {65535 - PORTS_PER_RUN}, e.g. {FIRST_PORT}, "
            "or unset it to let the suite pick free ports",
        )
    ports = Ports.from_base(base)
    busy = [p for p in ports.as_dict().values() if not port_free(p)]
    if busy:
        raise BadInput(
            f"port {busy[0]} on 127.0.0.1 is in use ({BASE_PORT_ENV}={pinned} asks for "
            f"{ports.etcd_client}-{ports.kubelet_healthz}); see who holds it: ss -ltnp 'sport = :{busy[0]}'",
            f"stop that process, or unset {BASE_PORT_ENV} to let the suite pick free ports",
        )
    return ports


def allocate(
    lock_dir: Path,
    taken_bases: Callable[[], set[int]] | set[int],
    reserve: Callable[[Ports], None] = lambda _: None,
) -> Ports:
    """Pick a block whose ports are all free and not recorded by another live run, and reserve it.

    Nothing binds the ports until etcd starts seconds later, so "free" alone does not make a block ours:
    `taken_bases` (the blocks recorded by live runs) is read and `reserve` (which records the block in
    the run's state file) is called under the same host-wide lock. Otherwise clusters brought up at the
    same moment (xdist workers) both find the first block free and collide on its ports.

    DEVICE_CONFORMANCE_BASE_PORT pins the block; then a busy port is an error naming the fix.
    """
    pinned = pinned_block()
    if pinned is not None:
        reserve(pinned)
        return pinned
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / "ports.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        taken = taken_bases() if callable(taken_bases) else taken_bases
        for block in range(MAX_BLOCKS):
            base = FIRST_PORT + block * PORTS_PER_RUN
            if base in taken:
                continue
            ports = Ports.from_base(base)
            if all(port_free(p) for p in ports.as_dict().values()):
                reserve(ports)
                return ports
    raise BadInput(
        f"no free block of {PORTS_PER_RUN} loopback ports between {FIRST_PORT} and "
        f"{FIRST_PORT + MAX_BLOCKS * PORTS_PER_RUN}",
        "delete kept clusters with `device-conformance cluster down --provider local --all`, "
        "or set DEVICE_CONFORMANCE_BASE_PORT",
    )
