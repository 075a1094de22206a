"""A fake's work folder (fakes/common/work_dir.py), as both fakes' as_subject use it, each with its own prefix:
removed on leaving, and one left by a SIGKILL (no `finally` runs) removed by the next start because its owner.lock
is no longer held; a live process's folder, one without an owner.lock (another program's, or an old-style
/tmp/dcv-XXXXXXXX or /tmp/dc-subj-XXXXXXXX), one of another prefix and another user's are kept.
(Moved here from test_device_plugin_as_subject_work_dir.py when the code moved out of the device plugin's
as_subject; the end-to-end tests of each fake stay beside it.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from device_conformance.fakes.common import work_dir
from device_conformance.fakes.device_plugin import as_subject as device_plugin_subject
from device_conformance.fakes.dra_driver import as_subject as dra_driver_subject

PREFIXES = [device_plugin_subject.WORK_PREFIX, dra_driver_subject.WORK_PREFIX]


def test_the_fakes_prefixes_are_their_own():
    assert PREFIXES == ["dcv-", "dc-subj-"]


def _holder(prefix: str, root: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process in work_dir(prefix, root) until killed, and its folder."""
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom device_conformance.fakes.common.work_dir import work_dir\n"
        "with work_dir(sys.argv[1], Path(sys.argv[2])) as d:\n    print(d, flush=True)\n    time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, prefix, str(root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


@pytest.mark.parametrize("prefix", PREFIXES)
def test_only_the_folders_of_gone_processes_are_removed(tmp_path, prefix):
    """Seen failing before 4b89370, when as_subject had no work_dir / remove_orphans (AttributeError)."""
    live, kept = _holder(prefix, tmp_path)
    dead, orphan = _holder(prefix, tmp_path)
    dead.kill()
    dead.wait(timeout=10)
    old_style = tmp_path / f"{prefix}abcd1234"  # no owner.lock: an old-style folder
    unlocked = tmp_path / f"{prefix}1-abcd1234"  # our name but no owner.lock: another program's
    other = next(p for p in PREFIXES if p != prefix)
    other_fakes = tmp_path / f"{other}1-abcd1234"
    for folder in (old_style, unlocked, other_fakes):
        folder.mkdir()
    (other_fakes / work_dir.OWNER_LOCK).touch()  # unlocked, but not this prefix's
    gone_pid = dead.pid  # reaped above: no process has it now
    staged_dead = tmp_path / f"{work_dir.staging_prefix(prefix)}{gone_pid}-x1"
    staged_live = tmp_path / f"{work_dir.staging_prefix(prefix)}{os.getpid()}-x2"
    staged_dead.mkdir()
    staged_live.mkdir()
    try:
        assert work_dir.remove_orphans(prefix, tmp_path) == [orphan, staged_dead]
        assert kept.is_dir() and staged_live.is_dir()
        assert old_style.is_dir() and unlocked.is_dir() and other_fakes.is_dir()
    finally:
        live.kill()
        live.wait(timeout=10)
    assert work_dir.remove_orphans(prefix, tmp_path) == [kept]


@pytest.mark.parametrize("prefix", PREFIXES)
def test_the_work_folder_is_removed_on_leaving(tmp_path, prefix):
    with work_dir.work_dir(prefix, tmp_path) as workdir:
        assert workdir.parent == tmp_path and workdir.name.startswith(f"{prefix}{os.getpid()}-")
        assert (workdir / work_dir.OWNER_LOCK).exists()
        assert work_dir.remove_orphans(prefix, tmp_path) == [], "our own lock is held"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a folder to another user")
def test_another_users_folder_is_kept(tmp_path):
    prefix = PREFIXES[0]
    theirs = tmp_path / f"{prefix}1-abcd1234"
    theirs.mkdir()
    (theirs / work_dir.OWNER_LOCK).touch()
    os.chown(theirs, 65534, 65534)
    assert work_dir.remove_orphans(prefix, tmp_path) == []
    assert theirs.is_dir()
