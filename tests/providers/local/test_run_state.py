"""The persisted run record: other harness versions' records stay readable (they may be alive)."""

import json
import os
import threading
import time

from device_conformance.providers.local import leftovers
from device_conformance.providers.local.layout import RunLayout
from device_conformance.providers.local.processes import ProcessRecord
from device_conformance.providers.local.state import RunState


def test_state_round_trips(tmp_path):
    layout = RunLayout(tmp_path)
    state = RunState.new("r1", "1.37.1", "dc-r1")
    state.ports = {"etcd_client": 21000}
    state.save(layout)
    loaded = RunState.load(layout)
    assert loaded == state
    assert loaded.owner_alive()


def test_unknown_keys_from_another_harness_version_are_ignored(tmp_path):
    layout = RunLayout(tmp_path)
    RunState.new("r2", "1.37.1", "dc-r2").save(layout)
    data = json.loads(layout.state_file.read_text())
    data["containerd_dir"] = "/somewhere"
    layout.state_file.write_text(json.dumps(data))
    loaded = RunState.load(layout)
    assert loaded.run_id == "r2" and loaded.owner_pid == os.getpid()
    assert loaded.owner_alive(), "a live run written by another checkout must not look abandoned"


def test_stateless_run_directory_is_left_alone_while_it_may_still_be_starting(tmp_path, monkeypatch):
    monkeypatch.setenv("DEVICE_CONFORMANCE_STATE", str(tmp_path))
    young = tmp_path / "runs" / "ryoung"
    old = tmp_path / "runs" / "rold"
    young.mkdir(parents=True)
    old.mkdir(parents=True)
    past = time.time() - leftovers.STARTING_GRACE_SECONDS - 60
    os.utime(old, (past, past))
    leftovers.clean_leftovers(log=lambda _: None)
    assert young.exists(), "a run directory without state that is seconds old may be starting up"
    assert not old.exists()


def test_a_state_file_written_between_the_read_and_the_look_is_read_again(tmp_path, monkeypatch):
    """Soak run 10 (2026-11-24): a worker's clean-up read a starting run's state file just before the owner's
    first save and looked for it just after, took it for unreadable and tore the live run down (the owner then
    failed: No such file or directory: .../state.partial). It now judges a run on its one read."""
    monkeypatch.setenv("DEVICE_CONFORMANCE_STATE", str(tmp_path))
    layout = RunLayout(tmp_path / "runs" / "rstart")
    layout.root.mkdir(parents=True)
    starting = RunState.new("rstart", "1.37.1", "dc-rstart")
    load = RunState.load.__func__
    reads = []

    def load_while_the_owner_saves(cls, run_layout):
        reads.append(run_layout.run_id)
        if len(reads) == 1:  # the owner's save lands right after this read failed
            starting.save(run_layout)
            raise FileNotFoundError(run_layout.state_file)
        return load(cls, run_layout)

    monkeypatch.setattr(RunState, "load", classmethod(load_while_the_owner_saves))
    logged = []
    assert leftovers.clean_leftovers(log=logged.append) == []
    assert layout.state_file.exists(), f"a live, starting run was torn down: {logged}"
    assert reads == ["rstart"]


def test_every_clean_up_is_journaled_with_the_cleaning_process(tmp_path, monkeypatch):
    """A worker's output is lost under xdist; the journal names which process tore which run down and why."""
    monkeypatch.setenv("DEVICE_CONFORMANCE_STATE", str(tmp_path))
    gone = RunLayout(tmp_path / "runs" / "rgone")
    gone.root.mkdir(parents=True)
    state = RunState.new("rgone", "1.37.1", "dc-rgone")
    state.owner_pid = 2**22 + 1  # above pid_max's default: no such process
    state.save(gone)
    stale = tmp_path / "runs" / "rstale"
    stale.mkdir()
    past = time.time() - leftovers.STARTING_GRACE_SECONDS - 60
    os.utime(stale, (past, past))
    monkeypatch.setattr(leftovers, "teardown", lambda layout, log: [])
    shown = []
    assert leftovers.clean_leftovers(log=shown.append) == ["rgone"]
    journal = leftovers.journal_path().read_text().splitlines()
    assert [line.split(": ", 1)[1] for line in journal] == shown
    assert shown == [
        f"found run rgone left by a crashed or interrupted session (owner pid {2**22 + 1} is gone); cleaning it up",
        f"removing run directory {stale}: no state file after {leftovers.STARTING_GRACE_SECONDS} s",
    ]
    assert all(f" pid {os.getpid()}: " in line for line in journal)


def test_saves_from_the_bring_up_threads_never_collide(tmp_path):
    """Soak 2026-11-24, run 10: the bring-up starts the runtime in a thread while the control plane starts in
    another, and both record a process and save the state. Two saves wrote the same state.partial and one
    rename found it gone (FileNotFoundError: .../state.partial -> .../state.json); every test of that worker
    errored. Saves and records of one run are now one at a time."""
    layout = RunLayout(tmp_path)
    state = RunState.new("rbusy", "1.37.1", "dc-rbusy")
    state.save(layout)
    start = threading.Barrier(8)
    problems = []

    def start_components(thread: int) -> None:
        start.wait()
        try:
            for index in range(100):
                name = f"component-{thread}-{index}"
                state.record(ProcessRecord(name, os.getpid(), None, [name], f"/logs/{name}"))
                state.save(layout)
        except Exception as exc:  # collected: an exception in a thread does not fail the test by itself
            problems.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=start_components, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert problems == []
    assert len(RunState.load(layout).processes) == 800
    assert [path.name for path in tmp_path.iterdir()] == ["state.json"]
