"""The rule choosing how many xdist workers (one cluster each) `-n auto` starts."""

import pytest

from device_conformance.errors import BadInput
from device_conformance.pytest_plugin.workers import auto_workers, available_memory_mib, workers_for


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
