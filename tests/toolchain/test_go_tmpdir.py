import os
import subprocess
import sys

import pytest

from device_conformance.toolchain import go_tmpdir


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_CACHE", str(tmp_path))
    monkeypatch.delenv("GOTMPDIR", raising=False)
    return tmp_path


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_process_claims_a_directory_of_its_own(cache):
    claimed = go_tmpdir.claim_go_tmpdir()
    assert claimed == cache / "go-tmp" / str(os.getpid())
    assert claimed.is_dir()
    assert os.environ["GOTMPDIR"] == str(claimed)
    assert go_tmpdir.claim_go_tmpdir() == claimed  # claimed once


def test_the_directories_of_processes_that_are_gone_are_removed(cache):
    root = cache / "go-tmp"
    gone = root / str(dead_pid()) / "go-build123"
    gone.mkdir(parents=True)
    alive = root / str(os.getppid()) / "go-build456"
    alive.mkdir(parents=True)
    other = root / "not-a-pid"
    other.mkdir()
    go_tmpdir.claim_go_tmpdir()
    assert sorted(p.name for p in root.iterdir()) == sorted([str(os.getpid()), str(os.getppid()), "not-a-pid"])
    assert alive.is_dir()


def test_a_users_own_gotmpdir_is_kept(cache, monkeypatch, tmp_path):
    monkeypatch.setenv("GOTMPDIR", str(tmp_path / "mine"))
    assert go_tmpdir.claim_go_tmpdir() is None
    assert os.environ["GOTMPDIR"] == str(tmp_path / "mine")
    assert not (cache / "go-tmp").exists()


def test_a_parents_directory_is_shared_and_a_vanished_one_replaced(cache, monkeypatch):
    parents = cache / "go-tmp" / str(os.getppid())
    parents.mkdir(parents=True)
    monkeypatch.setenv("GOTMPDIR", str(parents))
    assert go_tmpdir.claim_go_tmpdir() == parents
    parents.rmdir()
    assert go_tmpdir.claim_go_tmpdir() == cache / "go-tmp" / str(os.getpid())


def test_the_directory_is_removed_when_the_process_exits(cache):
    code = "from device_conformance.toolchain import go_tmpdir; print(go_tmpdir.claim_go_tmpdir())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    claimed = out.strip()
    assert claimed.startswith(str(cache / "go-tmp"))
    assert not os.path.exists(claimed)


@pytest.mark.skipif(go_tmpdir.shutil.which("go") is None, reason="needs the go command")
def test_a_sigkilled_go_build_leaves_its_work_directory_under_the_cache_not_in_tmp(cache, tmp_path):
    """The go command's WORK survives a SIGKILL; it must land in our directory, where the next claim finds it."""
    module = tmp_path / "mod"
    module.mkdir()
    (module / "go.mod").write_text("module example.com/slow\n\ngo 1.22\n")
    (module / "main.go").write_text("package main\n\nfunc main() {}\n")
    code = (
        "import os, signal, subprocess, sys, time\n"
        "from device_conformance.toolchain import go_tmpdir\n"
        "go = go_tmpdir.which_go()\n"
        "proc = subprocess.Popen([go, 'build', '-a', '-o', os.devnull, '.'], cwd=sys.argv[1],"
        " env={**os.environ, 'GOCACHE': sys.argv[2]})\n"
        "mine = os.environ.get('GOTMPDIR', '/tmp')\n"
        "while not any(n.startswith('go-build') for n in os.listdir(mine)):\n"
        "    time.sleep(0.05)\n"
        "proc.kill(); proc.wait()\n"
        "print(mine, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    before = {n for n in os.listdir("/tmp") if n.startswith("go-build")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(module), str(tmp_path / "gocache")], capture_output=True, text=True
    )
    assert done.returncode == -9, done.stderr
    left = done.stdout.strip()
    assert len([n for n in os.listdir(left) if n.startswith("go-build")]) == 1, "the SIGKILLed go left no WORK here"
    assert {n for n in os.listdir("/tmp") if n.startswith("go-build")} == before
    go_tmpdir.claim_go_tmpdir()
    assert not os.path.exists(left)
