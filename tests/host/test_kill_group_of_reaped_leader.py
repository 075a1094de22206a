"""Killing what a reaped process left in its group never hits whoever has its pid now (pids wrap in minutes on a
busy host: a stale killpg SIGKILLed fresh containers of other clusters, whose init leads its own session)."""

import os
import signal
import subprocess
import sys
import time

from device_conformance.fakes.common.process import FakeProcess
from device_conformance.host.process import kill_group_of_reaped_leader, pid_alive

# A leader that starts a child in its own group, prints the child's pid and exits (a shell wrapper's plugin).
WRAPPER = "import subprocess, sys; c = subprocess.Popen(['sleep', '60']); print(c.pid, flush=True)"


def _gone(pid: int, timeout: float = 5) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not pid_alive(pid)


def test_the_children_of_a_reaped_leader_are_killed():
    leader = subprocess.Popen([sys.executable, "-c", WRAPPER], stdout=subprocess.PIPE, start_new_session=True)
    child = int(leader.stdout.readline())
    leader.wait()
    try:
        kill_group_of_reaped_leader(leader.pid)
        assert _gone(child), "the reaped leader's child was left running"
    finally:
        if pid_alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_process_that_has_the_pid_now_is_left_alone():
    # Stands in for whoever got the reaped leader's pid: a session leader of its own, as a container's init is.
    new_owner = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        kill_group_of_reaped_leader(new_owner.pid)
        time.sleep(0.1)
        assert new_owner.poll() is None, "the process that has the pid now was killed"
    finally:
        new_owner.kill()
        new_owner.wait()


def test_killing_a_fake_that_already_ended_touches_nobody(tmp_path, monkeypatch):
    fake = FakeProcess(["sleep", "0.2"], tmp_path / "fake.log")
    fake.spawn(lambda: True, "sleep to start", 5)
    fake._proc.wait()  # it ended and was reaped: its pid may be someone else's
    new_owner = subprocess.Popen(["sleep", "60"], start_new_session=True)
    monkeypatch.setattr(fake._proc, "pid", new_owner.pid)  # the pid reused by another session leader
    try:
        fake.kill()
        time.sleep(0.1)
        assert new_owner.poll() is None, "killing an ended fake SIGKILLed the process that has its pid now"
    finally:
        new_owner.kill()
        new_owner.wait()
