"""A fake's work folder under /tmp that a SIGKILL does not leave behind: root/<prefix><pid>-XXXXXXXX.

A fake run as a vendor's subject keeps its config and control socket in a short folder under /tmp (sun_path holds
107 bytes) and removes it at exit, but a SIGKILLed process runs no `finally`. So the folder holds owner.lock,
flock()ed by its process for as long as it lives, and each start removes the folders whose lock it can take.
A lock and not a pid: the kernel drops the lock however the process ends, it means the same in any pid namespace
(a subject started in a container, or a test's pid seen from the host), and a reused pid cannot hold it; a pid
only says some process has that number now. The folder is made as .<prefix>new-<pid>-XXXXXXXX and renamed once
locked, so no reaper sees a live folder unlocked; only a staging folder left by a kill in between is judged by its
pid. Folders of another name, without an owner.lock (other programs', older ones) or of other users are kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from device_conformance.host.process import pid_alive

WORK_ROOT = Path("/tmp")
OWNER_LOCK = "owner.lock"


def staging_prefix(prefix: str) -> str:
    """The name a work folder has until its lock is held: .<prefix>new-<pid>-XXXXXXXX."""
    return f".{prefix}new-"


@contextlib.contextmanager
def work_dir(prefix: str, root: Path = WORK_ROOT) -> Iterator[Path]:
    """This process's work folder root/<prefix><pid>-XXXXXXXX, its owner.lock held until the process ends; removed
    on leaving. The folders of this prefix whose process is gone are removed first (remove_orphans)."""
    remove_orphans(prefix, root)
    staging = Path(tempfile.mkdtemp(prefix=f"{staging_prefix(prefix)}{os.getpid()}-", dir=root))
    lock = os.open(staging / OWNER_LOCK, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the open file description stays ours: a child gets no copy (O_CLOEXEC)
    workdir = root / (prefix + staging.name.removeprefix(staging_prefix(prefix)))
    try:
        staging.rename(workdir)
        yield workdir
    finally:
        shutil.rmtree(workdir if workdir.exists() else staging, ignore_errors=True)
        os.close(lock)


def remove_orphans(prefix: str, root: Path = WORK_ROOT) -> list[Path]:
    """Remove the work folders root/<prefix><pid>-* whose owner.lock can be taken, and the staging folders whose
    pid is not alive; returns them."""
    ours = re.compile(rf"^{re.escape(prefix)}\d+-")
    staged = re.compile(rf"^{re.escape(staging_prefix(prefix))}(\d+)-")
    removed = []
    for entry in sorted(root.glob(f"{prefix}*")) + sorted(root.glob(f"{staging_prefix(prefix)}*")):
        try:
            info = entry.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        staging = staged.match(entry.name)
        if staging:
            if not pid_alive(int(staging.group(1))):
                shutil.rmtree(entry, ignore_errors=True)
                removed.append(entry)
        elif ours.match(entry.name) and _remove_unlocked(entry):
            removed.append(entry)
    return removed


def _remove_unlocked(entry: Path) -> bool:
    """Remove a work folder whose owner.lock nobody holds, holding it meanwhile; False when it is held or missing."""
    try:
        fd = os.open(entry / OWNER_LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return False
    try:
        shutil.rmtree(entry, ignore_errors=True)
    finally:
        os.close(fd)
    return True
