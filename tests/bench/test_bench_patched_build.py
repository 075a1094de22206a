"""bench/run.py part 4, the patched build: one line changed, the build timed, nothing left behind (no real build)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from fake_k8s_tree import source_tree, write

from device_conformance.expectations.versions import KubeVersion

V = KubeVersion(1, 37, 2)
MANAGER = 'package devicemanager\n\nfunc f() {\n\tlogger.V(2).Info("Creating Device Plugin manager", "path", p)\n}\n'


def test_one_log_line_changes_and_nothing_else(bench_run, tmp_path):
    path = write(tmp_path / "manager.go", MANAGER)
    line = bench_run.patch_one_line(path, "c0ffee")
    assert line == 'logger.V(2).Info("[bench c0ffee] Creating Device Plugin manager", "path", p)'
    changed = [(a, b) for a, b in zip(MANAGER.splitlines(), path.read_text().splitlines(), strict=True) if a != b]
    assert len(changed) == 1
    write(tmp_path / "other.go", "package x\n")
    with pytest.raises(SystemExit, match="no log call"):
        bench_run.patch_one_line(tmp_path / "other.go", "c0ffee")


def _fake(bench_run, monkeypatch, tmp_path, script: str) -> Path:
    """get_tree, go list and `device-conformance k8s-source build` faked; returns where the trees go."""
    manager = "pkg/kubelet/cm/devicemanager/manager.go"
    monkeypatch.setattr(
        bench_run, "get_tree", lambda version, target, progress: write(source_tree(target) / manager, MANAGER)
    )
    monkeypatch.setattr(bench_run, "go_binary", lambda: "go")
    monkeypatch.setattr(bench_run, "build_env", lambda tree: {})
    stale = iter([4, 9])
    monkeypatch.setattr(bench_run, "stale_packages", lambda *args: next(stale))
    cli = write(tmp_path / "bin" / "device-conformance", "#!/bin/sh\n" + script)
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(bench_run, "cli", lambda: str(cli))
    (tmp_path / "trees").mkdir()
    return tmp_path / "trees"


def test_the_build_is_timed_against_the_target_and_the_tree_removed(bench_run, monkeypatch, tmp_path):
    trees = _fake(
        bench_run,
        monkeypatch,
        tmp_path,
        'entry="$DEVICE_CONFORMANCE_CACHE/kubernetes/v1.37.2-src-0123"; mkdir -p "$entry"\n'
        'printf \'#!/bin/sh\\necho Kubernetes v1.37.2\\n\' > "$entry/kubelet"; chmod +x "$entry/kubelet"\n'
        "grep -q '\\[bench ' \"$3/pkg/kubelet/cm/devicemanager/manager.go\" || exit 3\n"
        'echo "K8S_SOURCE $3: 6910 input files (63 MB) hash to 0123 (1.5s)"\necho "built Kubernetes from $3 in 12s"\n',
    )
    result = bench_run.patched_build(V, trees)
    assert result["returncode"] == 0, result["output_tail"]
    assert (result["stale_before"], result["stale_after"], result["go_build_s"], result["hash_s"]) == (4, 9, 12.0, 1.5)
    assert result["met"] is True and result["wall_s"] < 90 and result["kubelet_version"] == "Kubernetes v1.37.2"
    assert "[bench " in result["changed_line"] and "load average" in result["uptime_before"]
    assert list(trees.iterdir()) == []
    line = bench_run.patched_build_line(result)
    assert "target 90 s: met" in line and "load average" in line


def test_sigterm_during_the_build_stops_it_and_removes_the_tree(bench_run, monkeypatch, tmp_path):
    # The fake build sends SIGTERM to the bench (this process), then would run for a minute.
    trees = _fake(bench_run, monkeypatch, tmp_path, f"kill -TERM {os.getpid()}\nexec sleep 60\n")
    with pytest.raises(KeyboardInterrupt):
        bench_run.patched_build(V, trees)
    assert list(trees.iterdir()) == []
