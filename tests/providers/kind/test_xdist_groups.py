"""xdist: tests sharing one cluster run on one worker, and a grouping that silently fails is caught.

Runs small suites under real pytest-xdist workers (subprocesses); the cluster is a stand-in fixture.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

CONFTEST = """
    import os
    from pathlib import Path
    import pytest
    import device_conformance.providers.kind.engine
    import device_conformance.providers.kind.preflight
    from device_conformance.expectations.versions import KubeVersion
    from device_conformance.providers.base import ClusterHandle

    # The stand-in cluster needs no Docker or kind: skip the controller's engine, node image and preflight.
    device_conformance.providers.kind.preflight.preflight = lambda *args, **kwargs: None
    device_conformance.providers.kind.engine.ensure_engine = lambda *args, **kwargs: None
    device_conformance.providers.kind.engine.ensure_node_image = lambda docker, version, image, **kwargs: image

    @pytest.fixture(scope="session")
    def cluster():
        return ClusterHandle(name="stand-in", provider="existing", kubeconfig=Path("/dev/null"),
                             k8s_version=KubeVersion(1, 37, 1))

    @pytest.fixture
    def record(request):
        yield
        with open(os.environ["RECORD"], "a") as out:
            out.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {request.node.nodeid}\\n")
"""
TESTS = """
    import pytest

    @pytest.mark.parametrize("n", range(6))
    def test_on_the_cluster(cluster, record, n):
        assert cluster.name == "stand-in"

    @pytest.mark.parametrize("n", range(4))
    def test_without_cluster(record, n):
        pass
"""
# What pytest 9.2 + xdist 3.8 do (pytest-dev/pytest-xdist#1386): the @group suffix never reaches the ids.
LOSE_SUFFIX = """
    import pytest

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_finish(session):
        for item in session.items:
            item._nodeid = item._nodeid.split("@", 1)[0]
"""


def _run(tmp_path, *args, extra_conftest=""):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST) + textwrap.dedent(extra_conftest))
    (tmp_path / "test_shared.py").write_text(textwrap.dedent(TESTS))
    record = tmp_path / "record.txt"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", "-n", "2", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**__import__("os").environ, "RECORD": str(record)},
    )  # fmt: skip
    lines = record.read_text().split("\n") if record.exists() else []
    return proc, [line.split(" ", 1) for line in lines if line]


@pytest.mark.parametrize(
    "options",
    [
        ["--provider", "existing", "--kubeconfig", "/dev/null"],
        ["--provider", "kind", "--kind-cluster", "mine"],
    ],
)
def test_tests_of_a_shared_cluster_run_on_one_worker(tmp_path, options):
    proc, ran = _run(tmp_path, "--dist", "loadgroup", *options)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    on_cluster = [(worker, nodeid) for worker, nodeid in ran if "test_on_the_cluster" in nodeid]
    assert len(on_cluster) == 6
    assert len({worker for worker, _ in on_cluster}) == 1
    assert all(nodeid.endswith("@cluster-" + ("existing" if "existing" in options else "kind-mine"))
               for _, nodeid in on_cluster)  # fmt: skip


def test_shared_cluster_without_loadgroup_stops_with_the_fix(tmp_path):
    proc, ran = _run(tmp_path, "--dist", "load", "--provider", "existing", "--kubeconfig", "/dev/null")
    assert proc.returncode != 0
    assert "add --dist loadgroup" in proc.stdout + proc.stderr
    assert ran == []


def test_grouping_lost_by_xdist_stops_the_run(tmp_path):
    proc, ran = _run(
        tmp_path, "--dist", "loadgroup", "--provider", "existing", "--kubeconfig", "/dev/null",
        extra_conftest=LOSE_SUFFIX,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "xdist grouping is not in effect" in proc.stdout + proc.stderr
    assert "pytest<9.2" in proc.stdout + proc.stderr
    assert ran == []


def test_per_worker_clusters_need_no_grouping(tmp_path):
    proc, ran = _run(tmp_path, "--provider", "kind")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert len(ran) == 10
    assert not any("@" in nodeid for _, nodeid in ran)


QUICK = """
    import pytest

    @pytest.mark.parametrize("n", range(4))
    def test_quick(cluster, record, n):
        pass
"""
SLOW = """
    import pytest

    def test_first(cluster, record):
        pass

    @pytest.mark.slow
    def test_long(cluster, record):
        pass
"""
WINDOW = """
    import pytest

    @pytest.fixture(scope="module")
    def window(cluster):
        with open(__import__("os").environ["RECORD"] + ".windows", "a") as out:
            out.write("opened\\n")
        yield

    def test_a(cluster, window, record):
        pass

    def test_b(cluster, window, record):
        pass
"""


def test_with_a_cluster_per_worker_each_module_runs_on_one_worker_longest_first(tmp_path):
    (tmp_path / "test_a_quick.py").write_text(textwrap.dedent(QUICK))
    (tmp_path / "test_b_slow.py").write_text(textwrap.dedent(SLOW))
    (tmp_path / "test_c_window.py").write_text(textwrap.dedent(WINDOW))
    proc, ran = _run(tmp_path, "--dist", "loadgroup", "--provider", "kind")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    workers_of: dict[str, set[str]] = {}
    first_of: dict[str, str] = {}
    for worker, nodeid in ran:
        module = nodeid.split("::", 1)[0]
        workers_of.setdefault(module, set()).add(worker)
        first_of.setdefault(worker, module)
    assert {module: len(workers) for module, workers in workers_of.items()} == {
        "test_a_quick.py": 1,
        "test_b_slow.py": 1,
        "test_c_window.py": 1,
        "test_shared.py": 1,
    }, ran
    # The module with a slow test and the one with a module-scoped fixture start first, one per worker.
    assert sorted(first_of.values()) == ["test_b_slow.py", "test_c_window.py"], ran
    assert (tmp_path / "record.txt.windows").read_text() == "opened\n"
    assert all(nodeid.endswith("@" + nodeid.split("::", 1)[0]) for _, nodeid in ran), ran


@pytest.mark.parametrize(
    ("workers", "options", "created"),
    [
        ("3", ["--provider", "kind"], "created: 3/3 workers"),
        # A cluster every worker would share: its tests run in turn anyway, so one worker.
        ("2", ["--provider", "existing", "--kubeconfig", "/dev/null"], "created: 1/1 worker"),
    ],
)
def test_n_auto_takes_e2e_workers(tmp_path, monkeypatch, workers, options, created):
    monkeypatch.setenv("E2E_WORKERS", workers)
    proc, _ = _run(tmp_path, "-n", "auto", "--dist", "loadgroup", *options)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert created in proc.stdout, proc.stdout


def test_e2e_workers_that_is_no_count_stops_before_any_worker(tmp_path, monkeypatch):
    monkeypatch.setenv("E2E_WORKERS", "many")
    proc, ran = _run(tmp_path, "-n", "auto", "--provider", "kind")
    assert proc.returncode != 0
    assert "E2E_WORKERS='many' is not a number of xdist workers" in proc.stderr, proc.stderr
    assert ran == []


def test_measured_durations_hand_out_the_longest_module_first(tmp_path):
    """With every test measured (suites/durations.json under the rootdir) the order is by the measured sum: here
    the quick module measured longest and the two modules without a slow test or fixture beat the guess."""
    (tmp_path / "test_a_quick.py").write_text(textwrap.dedent(QUICK))
    (tmp_path / "test_b_slow.py").write_text(textwrap.dedent(SLOW))
    (tmp_path / "test_c_window.py").write_text(textwrap.dedent(WINDOW))
    measured = {f"test_a_quick.py::test_quick[{n}]": 100 for n in range(4)}
    measured |= {"test_b_slow.py::test_first": 1, "test_b_slow.py::test_long": 2}
    measured |= {"test_c_window.py::test_a": 1, "test_c_window.py::test_b": 1}
    measured |= {f"test_shared.py::test_on_the_cluster[{n}]": 10 for n in range(6)}
    measured |= {f"test_shared.py::test_without_cluster[{n}]": 10 for n in range(4)}
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "durations.json").write_text(__import__("json").dumps(measured))
    proc, ran = _run(tmp_path, "--dist", "loadgroup", "--provider", "kind")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first_of: dict[str, str] = {}
    for worker, nodeid in ran:
        first_of.setdefault(worker, nodeid.split("::", 1)[0])
    assert sorted(first_of.values()) == ["test_a_quick.py", "test_shared.py"], ran
