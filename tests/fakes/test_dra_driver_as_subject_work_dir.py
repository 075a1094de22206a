"""The fake DRA driver run as a vendor's subject (fakes/dra_driver/as_subject.py) leaves no work folder behind:
a SIGTERMed one removes its own, and one left by a SIGKILL (no `finally` runs) is removed by the next start, its
owner.lock no longer held (fakes/common/work_dir.py, as for the fake device plugin's)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from device_conformance.fakes.dra_driver import as_subject

AS_SUBJECT = [sys.executable, "-m", "device_conformance.fakes.dra_driver.as_subject", "--driver", "dra.example.com"]


@pytest.fixture
def node_dirs() -> Iterator[Path]:
    """The node's registry, plugins and CDI folders, on a short path (sun_path holds 107 bytes)."""
    path = Path(tempfile.mkdtemp(prefix="dcw-", dir="/tmp"))
    for name in ("registry", "plugins", "cdi"):
        (path / name).mkdir()
    yield path
    shutil.rmtree(path, ignore_errors=True)


def control_socket_folder(pid: int) -> Path:
    """The /tmp/dc-subj-* folder of the control socket `pid` listens on (its socket fds' inodes in /proc/net/unix):
    found the same way whatever the folder's name, the old /tmp/dc-subj-XXXXXXXX included."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target.removeprefix("socket:[").removesuffix("]"))
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[6] in inodes and fields[7].startswith("/tmp/dc-subj-"):
            return Path(fields[7]).parent
    raise AssertionError(f"process {pid} listens on no socket in /tmp/dc-subj-*")


def start(node_dirs: Path) -> tuple[subprocess.Popen[str], Path]:
    """as_subject started as vendor mode starts it (an empty --kubeconfig: no API calls), and its work folder."""
    argv = [*AS_SUBJECT, "--node-name", "node-1", "--kubeconfig", ""]
    for flag, name in (("--registry-dir", "registry"), ("--plugins-dir", "plugins"), ("--cdi-dir", "cdi")):
        argv += [flag, str(node_dirs / name)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert " ready: " in line, line
    return proc, control_socket_folder(proc.pid)


def test_a_killed_subjects_work_folder_is_removed_by_the_next_start(node_dirs):
    """Seen failing on the old code (mkdtemp /tmp/dc-subj-XXXXXXXX, removed in a `finally`), run before the change:
    "AssertionError: /tmp/dc-subj-sieqqfic outlived its process" after the second start, as 15 in /tmp had."""
    killed, left = start(node_dirs)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=10)
    assert left.is_dir(), "SIGKILL runs no finally"
    second, mine = start(node_dirs)
    try:
        assert not left.exists(), f"{left} outlived its process"
        assert mine.name.startswith(f"{as_subject.WORK_PREFIX}{second.pid}-")
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0
    assert not mine.exists(), "removed at a clean exit"


def test_a_terminated_subject_removes_its_own_work_folder(node_dirs):
    proc, mine = start(node_dirs)
    assert mine.is_dir()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0
    assert not mine.exists()
