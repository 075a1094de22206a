""".ci/run's kind subset: bash and bench/run.py read the same expression, and every test it names exists.

A renamed or removed suite test would otherwise drop out of CI's kind part without a word (-k matches nothing).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CI_RUN = ROOT / ".ci" / "run"

# The 14 tests CI runs on kind (docs/providers/kind.md, "CI on kind"): all of suites/smoke plus one device-plugin,
# two DRA and one taint path.
EXPECTED = {
    "suites/device_plugin/test_kubelet_restart.py::test_kubelet_restart_keeps_the_device_pod_and_plugin_reregisters",
    "suites/device_plugin/test_registration.py::test_registered_plugin_devices_become_capacity_and_allocatable",
    "suites/dra/test_dra_claim_lifecycle.py::test_template_claim_is_prepared_and_unprepared_once",
    "suites/dra/test_dra_restarts.py::test_node_reboot_prepares_the_claim_again_before_the_new_containers_start",
    "suites/smoke/test_cluster.py::test_node_ready_with_expected_kubelet_version",
    "suites/smoke/test_cluster.py::test_pod_runs_to_completion_and_its_log_is_read",
    "suites/smoke/test_knobs.py::test_kubelet_runs_with_the_sessions_verbosity_gates_and_fields",
    "suites/smoke/test_knobs.py::test_kubelet_logs_v4_lines_exactly_when_the_session_asks_for_them",
    "suites/smoke/test_kubelet_crash.py::test_wait_exited_quotes_the_kubelets_crash_report",
    "suites/smoke/test_kubelet_crash.py::test_stays_up_fails_with_the_crash_report_when_the_kubelet_exits",
    "suites/smoke/test_kubelet_lifecycle.py::test_running_pod_survives_kubelet_restart",
    "suites/smoke/test_kubelet_lifecycle.py::test_kubelet_comes_back_after_sigkill",
    "suites/smoke/test_kubelet_lifecycle.py::test_frozen_kubelet_resumes_after_sigcont",
    "suites/smoke/test_kubelet_lifecycle.py::test_reboot_simulation_recreates_the_pod_sandbox",
    "suites/smoke/test_kubelet_lifecycle.py::test_real_reboot_restarts_the_node_and_the_pod_runs_again",
    "suites/smoke/test_runtime_cdi.py::test_runtime_reports_cdi_enabled_on_the_spec_dir",
    "suites/smoke/test_runtime_cdi.py::test_cdi_device_edits_reach_the_container",
    "suites/taints/test_device_taints.py::test_noexecute_taint_in_resourceslice_evicts_the_pod",
}


def bash_kind_subset(ci_run: Path) -> str:
    """KIND_SUBSET as bash itself reads it (line continuations inside the double quotes included)."""
    script = f'eval "$(sed -n \'/^KIND_SUBSET=/,/"$/p\' {ci_run})"; printf %s "$KIND_SUBSET"'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout


def test_bench_reads_the_subset_bash_runs(bench_run):
    expression = bench_run.ci_kind_subset(CI_RUN)
    assert expression == bash_kind_subset(CI_RUN)
    assert expression.startswith("smoke or test_registered_plugin_devices_become_capacity_and_allocatable or ")
    assert "\\" not in expression and "\n" not in expression


def test_a_ci_run_without_the_subset_is_refused(bench_run, tmp_path):
    ci_run = tmp_path / "run"
    ci_run.write_text("make e2e\n")
    with pytest.raises(SystemExit, match="no KIND_SUBSET"):
        bench_run.ci_kind_subset(ci_run)


def test_every_test_the_subset_names_is_collected(bench_run):
    expression = bench_run.ci_kind_subset(CI_RUN)
    argv = [sys.executable, "-m", "pytest", "suites", "--collect-only", "-q", "-p", "no:cacheprovider"]
    argv += ["--provider", "kind", "-k", expression]
    proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    collected = {line for line in proc.stdout.splitlines() if re.match(r"^suites/\S+::\S+$", line)}
    assert collected == EXPECTED, proc.stdout[-2000:]
    named = re.findall(r"\btest_\w+", expression)
    for name in named:
        assert [test for test in collected if test.endswith(f"::{name}")], f"{name} matches no suite test"


def test_ci_checks_the_bug_data_against_the_release_notes_after_make_test():
    script = f'unset CI_STEPS; eval "$(grep \'^CI_STEPS=\' {CI_RUN})"; printf %s "$CI_STEPS"'
    steps = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert steps == ["test", "bugs-verify", "e2e", "certify", "kind-setup", "kind"]
    step_lines = [line for line in CI_RUN.read_text().splitlines() if line.startswith("step ")]
    assert step_lines[1] == 'step bugs-verify "device-conformance bugs verify" .venv/bin/device-conformance bugs verify'
