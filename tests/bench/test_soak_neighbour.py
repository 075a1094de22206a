"""bench/soak.py's CPU neighbours: started beside a run, their whole process group gone after it, however it ends."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SOAK_PATH = Path(__file__).resolve().parents[2] / "bench" / "soak.py"


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return sorted(members)


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


@pytest.mark.parametrize(
    ("spec", "parsed"), [("burn:1", ("burn", 1)), ("burn:64", ("burn", 64)), ("go-build", ("go-build", 1))]
)
def test_a_neighbour_spec_parses(soak, spec, parsed):
    assert soak.parse_neighbour(spec) == parsed


@pytest.mark.parametrize("spec", ["burn:0", "burn:65", "burn:", "burn:two", "burn", "go-build:2", "idle"])
def test_a_bad_neighbour_spec_names_what_is_accepted(soak, spec):
    with pytest.raises(ValueError) as error:
        soak.parse_neighbour(spec)
    assert str(error.value) == f"--neighbour {spec!r}: use burn:N (N from 1 to 64) or go-build"


def test_burners_spin_in_one_group_with_the_runs_tag_and_are_gone_after(soak):
    said = []
    with soak.neighbours(["burn:2"], tag="soak-test-tag", say=said.append) as started:
        (neighbour,) = started
        pids = sorted(process.pid for process in neighbour.processes)
        assert group_members(neighbour.pgid) == pids
        assert said == [f"neighbour burn:2 (process group {neighbour.pgid}: {pids[0]} {pids[1]})"]
        environ = Path(f"/proc/{pids[1]}/environ").read_bytes().split(b"\0")
        assert b"DEVICE_CONFORMANCE_TAG=soak-test-tag" in environ  # the soak's inventory would see it left
        first = [cpu_ticks(pid) for pid in pids]
        time.sleep(0.5)
        assert all(cpu_ticks(pid) > ticks for pid, ticks in zip(pids, first, strict=True)), "not spinning"
    assert group_members(neighbour.pgid) == []
    assert [process.returncode for process in neighbour.processes] == [-signal.SIGTERM, -signal.SIGTERM]


def test_neighbours_are_stopped_when_the_run_is_interrupted(soak):
    with pytest.raises(KeyboardInterrupt), soak.neighbours(["burn:1", "burn:1"], say=lambda _: None) as started:
        groups = [neighbour.pgid for neighbour in started]
        raise KeyboardInterrupt
    assert [group_members(pgid) for pgid in groups] == [[], []]


def test_burners_die_with_a_soak_that_is_sigkilled(soak, tmp_path):
    script = (
        f"import importlib.util, sys, time\n"
        f"spec = importlib.util.spec_from_file_location('bench_soak', {str(SOAK_PATH)!r})\n"
        "soak = importlib.util.module_from_spec(spec); sys.modules['bench_soak'] = soak\n"
        "spec.loader.exec_module(soak)\n"
        "neighbour = soak.Neighbour('burn:2'); neighbour.start()\n"
        "print(neighbour.pgid, flush=True); time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    pgid = int(parent.stdout.readline())
    assert len(group_members(pgid)) == 2
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 2
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert group_members(pgid) == []


@pytest.mark.skipif(shutil.which("go") is None, reason="no go on PATH")
def test_the_go_build_loop_builds_the_node_agent_and_leaves_nothing(soak):
    with soak.neighbours(["go-build"], say=lambda _: None) as (neighbour,):
        directory = neighbour.directory
        assert sorted(path.name for path in directory.iterdir()) == ["agent.go", "cache", "go.mod", "tmp"]
        deadline = time.monotonic() + 10
        while len(group_members(neighbour.pgid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the loop's shell, then go and its compiler
        assert len(group_members(neighbour.pgid)) >= 2
    assert group_members(neighbour.pgid) == []
    assert not directory.exists()
