"""The fake device plugin run as a vendor's subject (fakes/device_plugin/as_subject.py) leaves no work folder behind:
removed at exit, and one left by a SIGKILL (no `finally` runs) removed by the next start, because its owner.lock is
no longer held; a live process's folder, a folder without an owner.lock (another program's, or one of the old
/tmp/dcv-XXXXXXXX) and another user's are kept."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from device_conformance.fakes.device_plugin import as_subject

AS_SUBJECT = [sys.executable, "-m", "device_conformance.fakes.device_plugin.as_subject", "--resource", "example.com/d"]


@pytest.fixture
def socket_dir():
    path = Path(tempfile.mkdtemp(prefix="dcw-", dir="/tmp"))
    yield path
    for entry in path.iterdir():
        entry.unlink()
    path.rmdir()


def start(socket_dir: Path) -> tuple[subprocess.Popen[str], Path]:
    """as_subject started as vendor mode starts it, and its work folder (from its `ready <control socket>`)."""
    proc = subprocess.Popen([*AS_SUBJECT, "--socket-dir", str(socket_dir)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("ready "), line
    return proc, Path(line.split()[1]).parent


def test_a_killed_subjects_work_folder_is_removed_by_the_next_start(socket_dir):
    """Seen failing before the fix (mkdtemp /tmp/dcv-XXXXXXXX, removed in a `finally`): the killed subject's folder
    was still there after the second start, as ~40 in /tmp were."""
    killed, left = start(socket_dir)
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=10)
    assert left.is_dir(), "SIGKILL runs no finally"
    second, mine = start(socket_dir)
    try:
        assert not left.exists(), f"{left} outlived its process"
        assert mine.is_dir() and mine.name.startswith(f"dcv-{second.pid}-")
        assert len(str(mine / "ctl.sock")) < 107
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0
    assert not mine.exists(), "removed at a clean exit"


def _holder(root: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process in as_subject.work_dir(root) until killed, and its folder."""
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom device_conformance.fakes.device_plugin import as_subject\n"
        "with as_subject.work_dir(Path(sys.argv[1])) as d:\n    print(d, flush=True)\n    time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_only_the_folders_of_gone_processes_are_removed(tmp_path):
    """Seen failing before the fix: as_subject had no work_dir / remove_orphans (AttributeError)."""
    live, kept = _holder(tmp_path)
    dead, orphan = _holder(tmp_path)
    dead.kill()
    dead.wait(timeout=10)
    foreign = tmp_path / "dcv-abcd1234"  # no owner.lock: another program's, or an old-style folder
    foreign.mkdir()
    gone_pid = dead.pid  # reaped above: no process has it now
    staged_dead = tmp_path / f"{as_subject.STAGING_PREFIX}{gone_pid}-x1"
    staged_live = tmp_path / f"{as_subject.STAGING_PREFIX}{os.getpid()}-x2"
    staged_dead.mkdir()
    staged_live.mkdir()
    try:
        assert as_subject.remove_orphans(tmp_path) == [orphan, staged_dead]
        assert kept.is_dir() and foreign.is_dir() and staged_live.is_dir()
    finally:
        live.kill()
        live.wait(timeout=10)
    assert as_subject.remove_orphans(tmp_path) == [kept]


def test_the_work_folder_is_removed_on_leaving(tmp_path):
    with as_subject.work_dir(tmp_path) as workdir:
        assert workdir.parent == tmp_path and workdir.name.startswith(f"dcv-{os.getpid()}-")
        assert (workdir / as_subject.OWNER_LOCK).exists()
        assert as_subject.remove_orphans(tmp_path) == [], "our own lock is held"
    assert list(tmp_path.iterdir()) == []
