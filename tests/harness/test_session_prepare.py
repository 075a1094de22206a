"""Binaries are resolved at session start, before any test runs; bad settings stop the run with the fix.

Real pytest runs (subprocesses) with a stand-in provider and binary resolver, so nothing is built.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from device_conformance.expectations.versions import DEFAULT_K8S_VERSION

CONFTEST = """
    from pathlib import Path
    import pytest
    import device_conformance.fixtures.session as session
    from device_conformance.expectations.versions import KubeVersion
    from device_conformance.providers.base import ClusterHandle
    from device_conformance.toolchain.cache import BinarySet

    EVENTS = []

    class StandIn:
        name = "stand-in"

        def prepare(self):
            EVENTS.append("prepare")

        def up(self):
            EVENTS.append("up")
            return ClusterHandle("stand-in", "local", Path("/dev/null"), KubeVersion(1, 37, 1))

        def down(self):
            EVENTS.append("down")

        def keep(self):
            return "kept"

    def ensure_binaries(version, *, components, progress):
        EVENTS.append(f"ensure {version} {','.join(components)}")
        return BinarySet(version, Path("/cache") / version.tag, "cache")

    session.make_provider = lambda settings, **kwargs: StandIn()
    session.ensure_binaries = ensure_binaries

    @pytest.fixture
    def events():
        return EVENTS
"""
TESTS = """
    from pathlib import Path
    from device_conformance.expectations.versions import KubeVersion
    from device_conformance.fixtures.session import UpgradeKubelet

    def test_cluster(events, cluster):
        assert events[-1] == "up"
        assert events[0] == "prepare"

    def test_upgrade(events, upgrade_kubelet):
        assert upgrade_kubelet == UpgradeKubelet(KubeVersion(1, 36, 4), Path("/cache/v1.36.4/kubelet"))
        assert events.index("ensure 1.36.4 kubelet") < events.index("up")

    def test_without_cluster(events):
        pass
"""


def _env(**extra):
    env = {key: value for key, value in os.environ.items() if key not in ("PROVIDER", "K8S_VERSION", "UPGRADE_FROM")}
    env = {key: value for key, value in env.items() if not key.startswith(("KIND_", "DEVICE_CONFORMANCE_KUBE"))}
    return {**env, **extra}


def _run(tmp_path, *args, tests=TESTS, **env):
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (tmp_path / "test_prepare.py").write_text(textwrap.dedent(tests))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v", *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_env(**env),
    )  # fmt: skip
    return proc, proc.stdout + proc.stderr


def test_binaries_and_the_upgrade_kubelet_are_resolved_before_the_first_test(tmp_path):
    proc, output = _run(tmp_path)
    assert proc.returncode == 0, output
    assert "3 passed" in output
    # The header says what is tested and where things come from.
    assert "device-conformance: provider local (default: auto, no kubeconfig given)" in output
    assert f"kubelet and control plane v{DEFAULT_K8S_VERSION} (default)" in output
    assert "upgrade tests start from kubelet v1.36.4 (default)" in output
    # What the stand-in cluster reports (its ClusterHandle above), whatever the default.
    assert "[device-conformance] under test: kubelet v1.37.1, control plane v1.37.1" in output


def test_an_upgrade_kubelet_that_is_not_one_minor_below_is_not_built(tmp_path):
    tests = """
        def test_upgrade(events, upgrade_kubelet):
            assert "--upgrade-from is 1.35.8 (option --upgrade-from)" in upgrade_kubelet
            assert not [event for event in events if event.startswith("ensure")]
    """
    proc, output = _run(tmp_path, "--upgrade-from", "1.35.8", tests=tests)
    assert proc.returncode == 0, output


def test_collect_only_and_runs_without_the_cluster_prepare_nothing(tmp_path):
    tests = """
        def test_without_cluster(events):
            assert events == []
    """
    proc, output = _run(tmp_path, tests=tests, K8S_VERSION="not-a-version")
    assert proc.returncode == 0, output  # unusable settings matter only to tests that need a cluster
    assert "settings not usable" in output  # ... and the header says so
    proc, output = _run(tmp_path, "--collect-only", K8S_VERSION="not-a-version")
    assert proc.returncode == 0, output


def test_unusable_settings_stop_the_run_as_a_usage_error_with_the_fix(tmp_path):
    proc, output = _run(tmp_path, K8S_VERSION="1.37")
    assert proc.returncode == 4, output
    assert "K8S_VERSION='1.37' (environment) is not usable" in output
    assert "unset K8S_VERSION for the default" in output
    assert "INTERNALERROR" not in output


def test_an_empty_kubeconfig_stops_the_run_with_the_fix(tmp_path):
    proc, output = _run(tmp_path, "--kubeconfig", "")
    assert proc.returncode == 4, output
    assert "--kubeconfig '' is empty" in output and "drop --kubeconfig" in output


def test_a_ctrl_c_in_another_session_fixtures_teardown_still_takes_the_cluster_down(tmp_path):
    """pytest drops the session's remaining finalizers (the cluster's) when one lets a KeyboardInterrupt
    through; the cluster must go anyway (bench/interrupt.py, point session-teardown)."""
    tests = """
        import pytest

        @pytest.fixture(scope="session")
        def interrupted_on_teardown(cluster):
            yield
            raise KeyboardInterrupt  # Ctrl-C while this fixture is torn down

        def test_uses_both(interrupted_on_teardown):
            pass
    """
    conftest_tail = """
    import atexit
    atexit.register(lambda: print("EVENTS", EVENTS))
    """
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST) + textwrap.dedent(conftest_tail))
    (tmp_path / "test_prepare.py").write_text(textwrap.dedent(tests))
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-v"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_env(),
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 2, output  # interrupted
    assert "EVENTS ['prepare', 'up', 'down']" in output
    assert "interrupted before its cluster's teardown; tearing it down now" in output
