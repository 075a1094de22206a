"""Ctrl-C and crashes never leave half a cluster: teardown runs to its end under SIGINT, and finds processes
a run started but had not recorded yet (both found by bench/interrupt.py)."""

import os
import signal
import subprocess

import pytest

from device_conformance.core.interrupts import deferred_interrupts
from device_conformance.host.process import pid_alive
from device_conformance.providers.local import teardown as local_teardown
from device_conformance.providers.local.layout import RunLayout
from device_conformance.providers.local.processes import RUN_ENV, read_environ
from device_conformance.providers.local.state import RunState


def test_sigint_inside_the_block_is_raised_after_it():
    # Whatever handler was there before comes back (SIG_IGN when pytest itself was started in the background).
    before = signal.getsignal(signal.SIGINT)
    steps = []
    with pytest.raises(KeyboardInterrupt), deferred_interrupts(steps.append):
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("after the signal")
    assert steps == [
        "SIGINT received: finishing the teardown first, so nothing is left behind",
        "after the signal",
    ]
    assert signal.getsignal(signal.SIGINT) is before


def test_a_block_without_signals_raises_nothing_and_its_own_errors_pass_through():
    with deferred_interrupts():
        pass
    with pytest.raises(ValueError), deferred_interrupts():
        raise ValueError("own")


@pytest.fixture
def run_layout(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_STATE", str(tmp_path))
    layout = RunLayout.for_run("r0c0ffe")
    layout.root.mkdir(parents=True)
    return layout


def test_ctrl_c_during_teardown_still_removes_everything(run_layout, monkeypatch):
    state = RunState.new("r0c0ffe", "1.37.1", "dc-r0c0ffe")
    state.cgroup_root = "/device-conformance-r0c0ffe"
    state.save(run_layout)

    def interrupted_remove_root(name):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C half-way through the teardown
        return []

    monkeypatch.setattr(local_teardown.cgroups, "remove_root", interrupted_remove_root)
    with pytest.raises(KeyboardInterrupt):
        local_teardown.teardown(run_layout)
    assert not run_layout.root.exists(), "the run directory must go although Ctrl-C came first"


def test_a_process_the_state_never_recorded_is_found_by_its_run_id(run_layout):
    # Like the node's namespace holder when pytest is SIGKILLed before the holder's pid was saved.
    unrecorded = subprocess.Popen(["sleep", "60"], env={**os.environ, RUN_ENV: "r0c0ffe"}, start_new_session=True)
    other_run = subprocess.Popen(["sleep", "60"], env={**os.environ, RUN_ENV: "r0other"}, start_new_session=True)
    try:
        assert local_teardown.run_processes("r0c0ffe") == [unrecorded.pid]
        assert local_teardown.teardown(run_layout) == []
        unrecorded.wait(5)
        assert not pid_alive(unrecorded.pid)
        assert pid_alive(other_run.pid), "another run's process must never be touched"
    finally:
        for proc in (unrecorded, other_run):
            proc.kill()
            proc.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="unshare --mount needs root")
def test_an_interrupted_namespace_setup_leaves_no_holder(run_layout, monkeypatch):
    """Ctrl-C reaches the `nsenter mount` (pytest's process group) before the holder is in the run's state."""
    from device_conformance.providers.local import node_namespace

    def interrupted_mount(argv, **kwargs):
        assert local_teardown.run_processes("r0c0ffe"), "the holder is up while the namespace is set up"
        raise KeyboardInterrupt

    monkeypatch.setattr(node_namespace, "run", interrupted_mount)
    monkeypatch.setattr(node_namespace, "_ensure_host_dir", lambda path: None)  # nothing on the host
    with pytest.raises(KeyboardInterrupt):
        node_namespace.NodeNamespace.create(run_layout)
    assert local_teardown.run_processes("r0c0ffe") == [], "the namespace holder outlived the interrupted set-up"


class _ExecingProcEntry:
    """A /proc/<pid> entry read while its process is in execve: environ is empty for the first reads."""

    def __init__(self, environ: bytes, empty_reads: int, stat: str) -> None:
        self.environ, self.empty_reads, self.stat = environ, empty_reads, stat

    def __truediv__(self, name: str):
        entry = self

        class _File:
            def read_bytes(self) -> bytes:
                entry.empty_reads -= 1
                return b"" if entry.empty_reads >= 0 else entry.environ

            def read_text(self) -> str:
                return entry.stat

        return _File()


USER_STAT = "4242 (unshare) R 1 4242 4242 0 -1 4194560 0 0 0 0"
KTHREAD_STAT = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0"


def test_a_process_caught_in_execve_is_read_again_not_taken_as_someone_elses():
    # The CI failure of test_an_interrupted_namespace_setup_leaves_no_holder: `unshare` had made the namespace
    # and was exec'ing `sleep`, so its environ read as empty once (fs/proc/base.c environ_read).
    entry = _ExecingProcEntry(f"{RUN_ENV}=r0c0ffe\0".encode(), empty_reads=3, stat=USER_STAT)
    assert read_environ(entry) == f"{RUN_ENV}=r0c0ffe\0".encode()


def test_a_kernel_thread_is_read_once():
    entry = _ExecingProcEntry(b"never", empty_reads=1, stat=KTHREAD_STAT)
    assert read_environ(entry) == b""
    assert entry.empty_reads == 0, "a kernel thread has no environment to wait for"
