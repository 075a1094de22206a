"""The fake device plugin run as a vendor's subject (fakes/device_plugin/as_subject.py) leaves no work folder behind:
removed at exit, and one left by a SIGKILL (no `finally` runs) removed by the next start, because its owner.lock is
no longer held. Which folders a start removes and which it keeps: tests/fakes/test_common_work_dir.py (the code is
fakes/common/work_dir.py, shared with the fake DRA driver's as_subject)."""

from __future__ import annotations

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
        assert mine.is_dir() and mine.name.startswith(f"{as_subject.WORK_PREFIX}{second.pid}-")
        assert len(str(mine / "ctl.sock")) < 107
    finally:
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=20) == 0
    assert not mine.exists(), "removed at a clean exit"
