"""The rule choosing how many xdist workers (one cluster each) `-n auto` starts."""

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.pytest_plugin.workers import (
    Machine,
    auto_choice,
    auto_workers,
    available_memory_mib,
    busy_cores,
    choose,
    cpu_quota,
    cpu_times,
    load_average,
    workers_for,
)


@pytest.mark.parametrize(
    ("cores", "memory_mib", "provider", "expected"),
    [
        (2, 22 * 1024, "local", 8),  # this machine: 4 local clusters a core
        (1, 22 * 1024, "local", 4),
        (2, 22 * 1024, "kind", 3),  # kind: cores + 1
        (16, 64 * 1024, "local", 8),  # capped
        (16, 64 * 1024, "kind", 8),
        (8, 5 * 1024, "local", 3),  # memory-bound: (5 - 2) GiB at 1 GiB a worker
        (2, 2 * 1024, "local", 1),  # nothing to spare still runs one
        (1, 0, "local", 1),  # MemAvailable unknown
    ],
)
def test_workers_from_cores_and_memory(cores, memory_mib, provider, expected):
    assert workers_for(cores, memory_mib, provider) == expected


def test_e2e_workers_overrides_the_rule():
    assert auto_workers({"E2E_WORKERS": "5"}) == 5
    assert auto_workers({"E2E_WORKERS": "0"}) == 0


def test_e2e_workers_that_is_no_count_names_the_fix():
    with pytest.raises(BadInput) as excinfo:
        auto_workers({"E2E_WORKERS": "two"})
    assert "E2E_WORKERS='two'" in excinfo.value.problem and "unset it" in excinfo.value.fix


def test_available_memory_is_read_from_meminfo(tmp_path):
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24684000 kB\nMemFree:  100 kB\nMemAvailable:   22951936 kB\n")
    assert available_memory_mib(meminfo) == 22414
    assert available_memory_mib(tmp_path / "absent") == 0


@pytest.mark.parametrize(
    ("cores", "quota", "busy", "provider", "expected"),
    [
        (2, None, 0.0, "local", 8),  # idle: as before
        (2, None, 0.25, "local", 8),  # a quarter core (daemons, the run's own start) costs nothing
        (2, None, 0.75, "local", 6),  # 1.5 spare cores: floor(4 x 1.5)
        (2, None, 1.25, "local", 4),  # a neighbour taking one core
        (2, None, 2.0, "local", 1),  # the field report's machine (load 8.7): nothing to spare still runs one
        (2, None, 2.0, "kind", 1),
        (16, 1.5, 0.0, "local", 6),  # a container limited to 1.5 CPUs on a 16-core host
        (16, 1.5, 0.0, "kind", 2),
        (16, None, 11.25, "local", 8),  # 5 spare cores: capped
        (16, None, 11.25, "kind", 6),
        (4, 2.0, 1.75, "local", 2),  # quota 2, 1.5 busy beyond idle: 0.5 spare
    ],
)
def test_workers_from_spare_cores(cores, quota, busy, provider, expected):
    assert workers_for(cores, 22 * 1024, provider, busy=busy, quota=quota) == expected


def test_the_choice_says_why():
    choice = choose(Machine(cores=2, quota=None, busy=1.25, memory_mib=22 * 1024, load1=2.5), "local")
    assert choice.workers == 4
    assert choice.header_line() == (
        "  workers (-n auto): 4: 2 cores, no CPU quota, 1.25 busy now (load 2.50, 1 min): 1.00 spare cores; "
        "22.0 GiB available -> max(1, min(4 x 1.00 = 4 by CPU, 20 by memory, 8))"
    )
    assert auto_choice({"E2E_WORKERS": "3"}).reason == "E2E_WORKERS=3"


def test_busy_cores_from_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 50 0 50 350 50 0 0 0 0 0\n")
    assert cpu_times(stat) == (200, 1000)  # idle 700 + iowait 100 are not busy
    assert cpu_times(tmp_path / "absent") is None
    assert busy_cores(0.0, tmp_path / "absent") == 0.0


def test_load_average_is_read_from_proc(tmp_path):
    loadavg = tmp_path / "loadavg"
    loadavg.write_text("8.70 5.12 2.03 9/412 31337\n")
    assert load_average(loadavg) == 8.7
    assert load_average(tmp_path / "absent") == 0.0


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_cpu_quota_of_a_cgroup_v1_and_its_parents(tmp_path):
    self_cgroup = tmp_path / "self-cgroup"
    write(self_cgroup, "4:memory:/a/b\n2:cpu,cpuacct:/a/b\n0::/\n")
    write(tmp_path / "cg/cpu/a/b/cpu.cfs_quota_us", "-1\n")  # none of its own
    write(tmp_path / "cg/cpu/a/b/cpu.cfs_period_us", "100000\n")
    write(tmp_path / "cg/cpu/a/cpu.cfs_quota_us", "150000\n")  # the parent's: 1.5 CPUs
    write(tmp_path / "cg/cpu/a/cpu.cfs_period_us", "100000\n")
    assert cpu_quota(tmp_path / "cg", self_cgroup) == 1.5


def test_cpu_quota_of_a_cgroup_v2(tmp_path):
    self_cgroup = tmp_path / "self-cgroup"
    write(self_cgroup, "0::/job\n")
    write(tmp_path / "cg/cgroup.controllers", "cpu memory\n")
    write(tmp_path / "cg/job/cpu.max", "250000 100000\n")
    write(tmp_path / "cg/cpu.max", "max 100000\n")
    assert cpu_quota(tmp_path / "cg", self_cgroup) == 2.5


def test_no_quota(tmp_path):
    self_cgroup = tmp_path / "self-cgroup"
    write(self_cgroup, "2:cpu,cpuacct:/\n0::/\n")
    write(tmp_path / "cg/cpu/cpu.cfs_quota_us", "-1\n")
    write(tmp_path / "cg/cpu/cpu.cfs_period_us", "100000\n")
    assert cpu_quota(tmp_path / "cg", self_cgroup) is None
    assert cpu_quota(tmp_path / "cg", tmp_path / "absent") is None
