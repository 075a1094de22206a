"""The cluster's own cgroup root in every cgroup v1 hierarchy (the kubelet requires it to exist)."""

from __future__ import annotations

import os
import time
from pathlib import Path

CGROUP_MOUNT = Path("/sys/fs/cgroup")


def hierarchies(include_unified: bool = False) -> list[Path]:
    """Mounted v1 hierarchies (cpu, memory, ...); the hybrid 'unified' (v2) mount only on request."""
    return [
        p
        for p in sorted(CGROUP_MOUNT.iterdir())
        if p.is_dir() and not p.is_symlink() and (include_unified or p.name != "unified")
    ]


def create_root(name: str) -> None:
    for hierarchy in hierarchies():
        path = hierarchy / name.lstrip("/")
        path.mkdir(exist_ok=True)
        if hierarchy.name.startswith("cpuset"):
            # A new cpuset cgroup starts with no CPUs and no memory nodes; inherit the parent's.
            for knob in ("cpuset.cpus", "cpuset.mems"):
                (path / knob).write_text((hierarchy / knob).read_text())


def remove_root(name: str, timeout: float = 10) -> list[Path]:
    """Remove the root and everything below it, deepest first; returns what could not be removed."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        # The kubelet also creates its cgroups in the hybrid host's v2 mount.
        for hierarchy in hierarchies(include_unified=True):
            top = hierarchy / name.lstrip("/")
            if not top.exists():
                continue
            for dirpath, _, _ in sorted(os.walk(top), key=lambda entry: -entry[0].count("/")):
                try:
                    os.rmdir(dirpath)
                except FileNotFoundError:
                    pass
                except OSError:
                    left.append(Path(dirpath))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)
