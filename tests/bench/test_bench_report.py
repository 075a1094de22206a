"""bench/run.py writes its JSON and PNG after every part, so a bench stopped half way keeps its figures."""

from __future__ import annotations

import json

import pytest
from PIL import Image


def one_suite_run(workers: int) -> dict:
    return {"provider": "local", "workers": workers, "marks": "", "wall_s": 60.0 * workers, "pytest": "3 passed in 1s"}


def test_a_report_written_before_the_end_says_it_is_incomplete(bench_run, tmp_path):
    report = {"k8s_version": "1.37.1", "host": "2 cores, 23 GiB", "suite": [one_suite_run(1)]}
    bench_run.write_report(report, tmp_path / "bench-x")
    written = json.loads((tmp_path / "bench-x.json").read_text())
    assert written["complete"] is False
    assert [run["workers"] for run in written["suite"]] == [1]
    with Image.open(tmp_path / "bench-x.png") as figure:
        assert figure.format == "PNG" and figure.width > 0 and figure.height > 0


def test_the_last_write_replaces_the_partial_one(bench_run, tmp_path):
    report = {"k8s_version": "1.37.1", "host": "2 cores, 23 GiB", "suite": [one_suite_run(1)]}
    bench_run.write_report(report, tmp_path / "bench-x")
    report["suite"].append(one_suite_run(2))
    report["complete"] = True
    bench_run.write_report(report, tmp_path / "bench-x")
    written = json.loads((tmp_path / "bench-x.json").read_text())
    assert written["complete"] is True
    assert [run["workers"] for run in written["suite"]] == [1, 2]


def test_workers_take_counts_and_auto(bench_run):
    assert [bench_run.worker_option(n) for n in [" 1", "2", "auto "]] == ["1", "2", "auto"]


def test_a_worker_count_that_is_neither_names_the_fix(bench_run):
    with pytest.raises(SystemExit, match="neither a count nor 'auto'"):
        bench_run.worker_option("many")


def test_the_count_auto_started_is_read_from_xdist(bench_run):
    lines = ["platform linux -- Python 3.11.7", "created: 8/8 workers", "8 workers [173 items]"]
    assert bench_run.workers_started(lines, "auto") == 8
    assert bench_run.workers_started([], "3") == 3
