"""bench/run.py's local-vs-kind table (`make bench PROVIDER=kind`): which figure lands in which cell."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


REPORT = {
    "bring_up": {
        "bring-up cold images": [11.0],
        "bring-up warm": [8.0],
        "kubelet restart to node Ready": [0.5, 0.7, 0.9],
        "pod create to Running": [0.6, 0.6, 2.0],
        "teardown": [2.0, 3.0],
    },
    "kind": {
        "engine": {"engine": "private dockerd (started by the bench)"},
        "single": {
            "cluster create to node Ready": [48.0],
            "kubelet restart to node Ready": [3.0, 4.0, 5.0],
            "pod create to Running": [1.2, 1.5, 9.0],
            "teardown": [6.0],
        },
        "node_image": {"node image build, cached": 2.5},
        "suite": [
            {"provider": "local", "workers": 2, "wall_s": 100.0, "pytest": "13 passed"},
            {"provider": "kind", "workers": 2, "wall_s": 250.0, "pytest": "13 passed"},
        ],
    },
}


def test_rows_put_medians_side_by_side(bench_run):
    assert bench_run.comparison_rows(REPORT) == [
        ("cluster create to node Ready", 8.0, 48.0),
        ("kubelet restart to node Ready", 0.7, 4.0),
        ("pod create to Running", 0.6, 1.5),
        ("teardown", 2.5, 6.0),
        ("node image build, cached", None, 2.5),
        ("CI kind subset, 2 workers (suite wall)", 100.0, 250.0),
    ]


def test_table_gives_the_ratio_only_where_both_were_measured(bench_run):
    table = bench_run.comparison_table(bench_run.comparison_rows(REPORT)).splitlines()
    assert table[0] == "| measurement (median) | local | kind | kind / local |"
    assert table[2] == "| cluster create to node Ready | 8.00 s | 48.00 s | 6.0 |"
    assert table[6] == "| node image build, cached | - | 2.50 s | - |"
    assert table[7] == "| CI kind subset, 2 workers (suite wall) | 100.00 s | 250.00 s | 2.5 |"


def test_a_local_only_report_has_no_kind_rows(bench_run):
    rows = bench_run.comparison_rows({"bring_up": REPORT["bring_up"]})
    assert rows == [
        ("cluster create to node Ready", 8.0, None),
        ("kubelet restart to node Ready", 0.7, None),
        ("pod create to Running", 0.6, None),
        ("teardown", 2.5, None),
    ]


def test_a_local_only_table_has_no_ratio(bench_run):
    table = bench_run.comparison_table(bench_run.comparison_rows({"bring_up": REPORT["bring_up"]})).splitlines()
    assert table[2] == "| cluster create to node Ready | 8.00 s | - | - |"


def test_the_summary_line_is_pytests_not_the_last_line(bench_run):
    lines = [
        "ERROR suites/taints/test_device_taints.py::test_x",
        "============= 12 passed, 1 error in 140.12s (0:02:20) =============",
        "[device-conformance] stopping the private dockerd (/tmp/dcd-jbmk0uxi)",
    ]
    assert bench_run.pytest_summary(lines) == "12 passed, 1 error in 140.12s (0:02:20)"
    assert bench_run.pytest_summary(["no summary"]) == "no summary"
