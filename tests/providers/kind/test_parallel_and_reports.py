"""Staggered creation slots across processes, cluster names, failure reports with the provider's logs,
and the controller-side preflight under xdist."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.host.dockercli import Docker
from device_conformance.providers.kind import parallel
from device_conformance.wait.core import until


@pytest.fixture
def fake_docker(tmp_path):
    """A docker CLI stand-in whose `network inspect kind` succeeds once $NETWORK_FILE exists."""
    script = tmp_path / "docker"
    script.write_text('#!/bin/sh\n[ "$1 $2" = "network inspect" ] && [ -e "$NETWORK_FILE" ]\n')
    script.chmod(0o755)
    os.environ["NETWORK_FILE"] = str(tmp_path / "network")
    yield Docker(binary=str(script)), tmp_path / "network"
    del os.environ["NETWORK_FILE"]


def _blocked_flock_waiters(path) -> int:
    """How many processes/threads wait in flock() on `path` right now (Linux /proc/locks: a waiter's line
    has "->" before its lock type, and names the file as major:minor:inode)."""
    inode = os.stat(path).st_ino
    waiting = 0
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields and any(f.endswith(f":{inode}") for f in fields):
            waiting += 1
    return waiting


def test_at_most_n_creations_at_once(tmp_path, fake_docker):
    """Four creations, two slots: the first two are inside together while the other two announce they
    wait for a slot; once released, the other two get in, never more than two at a time."""
    docker, network = fake_docker
    network.touch()
    lock = threading.Lock()
    inside: list[str] = []
    entered: list[str] = []
    peak = [0]
    entries = threading.Semaphore(0)
    waiting = threading.Semaphore(0)
    release = threading.Event()

    def creation(name):
        def log(message):
            if "waiting for a slot" in message:
                waiting.release()

        with parallel.creation_slot(tmp_path / "locks", docker, log=log, slots=2):
            with lock:
                inside.append(name)
                entered.append(name)
                peak[0] = max(peak[0], len(inside))
            entries.release()
            release.wait(timeout=30)
            with lock:
                inside.remove(name)

    threads = [threading.Thread(target=creation, args=(f"c{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    assert entries.acquire(timeout=30) and entries.acquire(timeout=30), f"two creations got in: {entered}"
    assert waiting.acquire(timeout=30) and waiting.acquire(timeout=30), "the other two announced they wait"
    with lock:
        assert len(inside) == 2, f"inside while two wait: {inside}"
    release.set()
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(entered) == ["c0", "c1", "c2", "c3"]
    assert peak[0] == 2


def test_creation_runs_alone_while_kinds_network_is_missing(tmp_path, fake_docker):
    """The first creation, kind's network still missing, holds the network lock; a second one waits in
    flock on it until the first is out (seen in /proc/locks, not guessed with a sleep)."""
    docker, network = fake_docker
    events: list = []
    first_inside = threading.Event()
    second_blocked = threading.Event()

    def first():
        with parallel.creation_slot(tmp_path / "locks", docker, slots=3):
            events.append("first in")
            first_inside.set()
            second_blocked.wait(timeout=30)
            network.touch()  # kind created its network
            events.append("first out")

    thread = threading.Thread(target=first)
    thread.start()
    assert first_inside.wait(timeout=30)

    def second():
        with parallel.creation_slot(tmp_path / "locks", docker, slots=3):
            events.append("second in")

    other = threading.Thread(target=second)
    other.start()
    until(
        lambda: True if _blocked_flock_waiters(tmp_path / "locks" / "network.lock") else None,
        what="the second creation to wait in flock on the network lock",
        timeout=30,
        interval=0.01,
    )
    second_blocked.set()
    thread.join(timeout=30)
    other.join(timeout=30)
    assert events == ["first in", "first out", "second in"]


def test_cluster_names_are_per_run_and_worker(monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    monkeypatch.setenv("PYTEST_XDIST_TESTRUNUID", "ABCDEF0123")
    assert parallel.cluster_name() == "dc-abcdef-gw3"
    assert parallel.check_name("dc-abcdef-gw3") == "dc-abcdef-gw3"
    with pytest.raises(BadInput):
        parallel.check_name("x" * 51)


REPORT_CONFTEST = """
    from pathlib import Path
    import pytest
    from device_conformance.expectations.versions import KubeVersion
    from device_conformance.providers.base import ClusterHandle

    def collect(target):
        target.mkdir(parents=True, exist_ok=True)
        (target / "kubelet.log").write_text("node journal")

    @pytest.fixture(scope="session")
    def cluster():
        return ClusterHandle(name="stand-in", provider="kind", kubeconfig=Path("/dev/null"),
                             k8s_version=KubeVersion(1, 37, 1), collect_logs=collect)
"""
REPORT_TEST = """
    from device_conformance.fixtures.reports import attach_on_failure

    def test_fails(cluster, request):
        attach_on_failure(request.node, "fake device plugin x call log", lambda: "Allocate dev-0")
        assert False
"""


def test_a_failing_test_gets_the_cluster_logs_beside_the_fakes_call_logs(tmp_path):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(REPORT_CONFTEST))
    (tmp_path / "test_report.py").write_text(textwrap.dedent(REPORT_TEST))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(tmp_path), "-q"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 1, proc.stdout
    folder = tmp_path / "artifacts" / "test_report.py__test_fails"
    assert (folder / "fake-device-plugin-x-call-log.txt").read_text() == "Allocate dev-0"
    assert (folder / "cluster-logs" / "kubelet.log").read_text() == "node journal"


def test_xdist_run_on_kind_stops_before_workers_with_the_fix(tmp_path):
    (tmp_path / "test_nothing.py").write_text("def test_x(cluster):\n    pass\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--provider", "kind"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "KIND": str(tmp_path / "no-kind")},
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 4, output  # usage error
    assert "--provider kind cannot run here" in output
    assert "kind is not installed" in output
    assert "INTERNALERROR" not in output
