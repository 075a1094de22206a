"""A private mount namespace for the node's processes: containerd, the kubelet and their children.

The kubelet hard-codes /var/lib/kubelet/device-plugins, so two clusters on one host would collide.
Inside this namespace the kubelet's fixed paths are bind mounts of the run directory; every mount the
kubelet and containerd make (pod volumes, netns files, overlay rootfs) stays in the namespace and
vanishes with it, so nothing can leak onto the host.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from device_conformance.core.errors import ConformanceError
from device_conformance.host.process import pid_alive, run
from device_conformance.providers.local.layout import NODE_PRIVATE_PATHS, RunLayout, state_root
from device_conformance.providers.local.processes import RUN_ENV

CREATED_HOST_DIRS = "created-host-dirs.json"


def mount_ns_inode(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}/ns/mnt").st_ino
    except OSError:
        return None


class NodeNamespace:
    def __init__(self, holder_pid: int, inode: int) -> None:
        self.holder_pid = holder_pid
        self.inode = inode

    @classmethod
    def create(cls, layout: RunLayout) -> NodeNamespace:
        holder = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--", "sleep", "infinity"],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Its pid reaches the run's state only once the namespace is set up: if the owner dies before,
            # teardown finds the holder by this (teardown.run_processes).
            env={**os.environ, RUN_ENV: layout.run_id},
        )
        try:
            own = mount_ns_inode(os.getpid())
            deadline = time.monotonic() + 10
            while (inode := mount_ns_inode(holder.pid)) in (None, own):
                if time.monotonic() > deadline or holder.poll() is not None:
                    raise ConformanceError("unshare --mount did not create a mount namespace (are we root?)")
                time.sleep(0.01)
            namespace = cls(holder.pid, inode)
            # Under the host-wide lock: clusters brought up at once (xdist workers) create the same mount
            # points, and the last run's teardown removes them; neither may run between a check and a mount.
            with host_dirs_lock():
                for node_path in NODE_PRIVATE_PATHS:
                    source = layout.private(node_path)
                    source.mkdir(parents=True, exist_ok=True)
                    _ensure_host_dir(Path(node_path))
                    run(namespace.wrap(["mount", "--bind", str(source), node_path]))
        except BaseException:
            # Not in the run's state yet, so teardown would not know it: a Ctrl-C reaching the `nsenter mount`
            # (same process group) left the holder and its namespace behind (bench/interrupt.py, run-dir).
            holder.kill()
            holder.wait()
            raise
        return namespace

    def wrap(self, argv: list[str]) -> list[str]:
        """argv run inside the namespace (nsenter execs, so the pid is the command's own)."""
        return ["nsenter", f"--target={self.holder_pid}", "--mount", "--", *argv]

    def alive(self) -> bool:
        return pid_alive(self.holder_pid) and mount_ns_inode(self.holder_pid) == self.inode

    def member_pids(self) -> list[int]:
        members = []
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and mount_ns_inode(int(entry.name)) == self.inode:
                members.append(int(entry.name))
        return members

    def destroy(self, timeout: float = 30) -> None:
        """SIGKILL every process in the namespace (shims, containers, holder): the namespace goes.

        An open descriptor of the namespace pins it for the whole loop. Without it, once the last member
        died the kernel gives its number to the next namespace created on the host (the lowest free one:
        proc_alloc_inum, fs/proc/generic.c), often another cluster's container starting that moment, and
        the next scan by number would SIGKILL it. A holder that is already gone leaves nothing to pin and
        nothing to tell apart: teardown finds what is left by the run id instead (run_processes)."""
        try:
            pin = os.open(f"/proc/{self.holder_pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if os.fstat(pin).st_ino != self.inode:
                return  # the holder's pid now belongs to another process
            self._kill_members(time.monotonic() + timeout)
        finally:
            os.close(pin)

    def _kill_members(self, deadline: float) -> None:
        while members := self.member_pids():
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            for pid in members:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass
            if time.monotonic() > deadline:
                raise ConformanceError(f"processes {members} in the node mount namespace survive SIGKILL")
            time.sleep(0.05)


@contextmanager
def host_dirs_lock() -> Iterator[None]:
    """Serialises creating host mount points (and mounting on them) with removing them."""
    state_root().mkdir(parents=True, exist_ok=True)
    with (state_root() / "host-dirs.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _ensure_host_dir(path: Path) -> None:
    """Create a mount point on the host if missing, and remember it so the last run removes it."""
    if path.exists():
        return
    path.mkdir(parents=True, exist_ok=True)
    record = state_root() / CREATED_HOST_DIRS
    created = json.loads(record.read_text()) if record.exists() else []
    if str(path) not in created:
        record.write_text(json.dumps([*created, str(path)]))


def remove_created_host_dirs() -> None:
    """Remove the (empty) mount points we created on the host, once no run needs them."""
    record = state_root() / CREATED_HOST_DIRS
    if not record.exists():
        return
    remaining = []
    for path in json.loads(record.read_text()):
        try:
            os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError:
            remaining.append(path)
    if remaining:
        record.write_text(json.dumps(remaining))
    else:
        record.unlink()
