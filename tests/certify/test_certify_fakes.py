"""The certifier against our fakes: a fake keeping the contract passes every clause, and each defective-vendor
mode fails exactly its clause and no other."""

import pytest
from certify_subjects import CLAIMS, VirtualClock, run_device_plugin, run_dra_driver

from device_conformance.certify import limits
from device_conformance.certify.clauses import DEVICE_PLUGIN_CLAUSES, DRA_DRIVER_CLAUSES
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS
from device_conformance.fakes.device_plugin import DeviceConfig


def verdicts(cert):
    return {r.clause.id: r.verdict for r in cert.results}


def test_the_fake_device_plugin_passes_every_clause(clean_device_plugin):
    assert verdicts(clean_device_plugin) == {c.id: PASS for c in DEVICE_PLUGIN_CLAUSES}, [
        (r.clause.id, r.message) for r in clean_device_plugin.results if r.verdict != PASS
    ]


def test_the_fake_dra_driver_passes_every_clause_but_slices_without_an_api_server(clean_dra_driver):
    expected = {c.id: PASS for c in DRA_DRIVER_CLAUSES} | {"DRA-SLICES": NOT_APPLICABLE}
    assert verdicts(clean_dra_driver) == expected, [
        (r.clause.id, r.message) for r in clean_dra_driver.results if r.verdict != expected[r.clause.id]
    ]


DEVICE_PLUGIN_DEFECTS = [
    ({"defects": ["duplicate-device-ids"]}, "DP-LAW-UNIQUE", "duplicated ['dev-1']"),
    ({"defects": ["unstable-device-ids"]}, "DP-LAW-STABLE", "a second stream on ['dev-1-r2', 'dev-2-r2', 'dev-3-r2']"),
    ({"defects": ["allocate-crash-on-unknown-id"]}, "DP-ALLOC-UNKNOWN", "no answer (connection lost"),
    ({"defects": ["preferred-ignores-must-include"]}, "DP-PREFERRED", "must-include ['dev-3'] missing"),
    ({"defects": ["allocate-first-container-only"]}, "DP-ALLOC-MULTI", "1 container responses for 2 container"),
    ({"defects": ["prestart-error"]}, "DP-PRESTART", "failed: INTERNAL: PreStartContainer failed"),
    ({"auto_reregister": False}, "DP-REREGISTER", "no Register within 8s after kubelet.sock was re-created"),
    # Contract breaches the fake's ordinary settings can express:
    ({"api_version": "v1alpha"}, "DP-REG-VERSION", "version 'v1alpha'; the kubelet supports ['v1beta1']"),
    ({"resource_name": "example.com/other"}, "DP-REG-RESOURCE", "registered 'example.com/other', expected"),
    (
        {"devices": [DeviceConfig("dev-1", numa_nodes=[0, -1]), DeviceConfig("dev-2"), DeviceConfig("dev-3")]},
        "DP-LAW-TOPOLOGY",
        "device 'dev-1' has NUMA nodes [0, -1]",
    ),
    (
        {"devices": [DeviceConfig("dev-1", numa_nodes=[0]), DeviceConfig("dev-2"), DeviceConfig("dev-3", "Sick")]},
        "DP-LAW-HEALTH",
        "health values {'dev-3': 'Sick'}",
    ),
]


@pytest.mark.parametrize(
    "overrides,clause,finding", DEVICE_PLUGIN_DEFECTS, ids=[c for _, c, _ in DEVICE_PLUGIN_DEFECTS]
)
def test_each_device_plugin_defect_fails_exactly_its_clause(overrides, clause, finding, monkeypatch):
    """A defect mode, or a breach the fake's settings express; DP-LAW-TOPOLOGY stays applicable throughout. A plugin
    registering another resource than --resource is waited for only briefly here: the one asked for never comes."""
    monkeypatch.setattr(limits, "RESOURCE_AFTER_ANOTHER", 0.5)
    overrides = dict(overrides)
    cert = run_device_plugin(overrides.pop("defects", ()), **overrides)
    assert cert.failed_ids() == [clause], [(r.clause.id, r.message) for r in cert.results if r.verdict == FAIL]
    result = next(r for r in cert.results if r.clause.id == clause)
    assert finding in result.message
    assert all(v == PASS for c, v in verdicts(cert).items() if c != clause)
    if clause == "DP-ALLOC-UNKNOWN":  # the crash itself is the evidence, and the subject was started again
        assert "subject process: exit 2" in result.evidence
        assert any("panic: Allocate: unknown device IDs" in line for line in result.evidence)
        assert cert.notes[0] == "subject process: started 2 time(s), exit 0"


DRA_DEFECTS = [
    ("prepare-rejects-repeat", "DRA-PREPARE-IDEMPOTENT", "is already prepared"),
    ("prepare-unknown-claim-succeeds", "DRA-PREPARE-MULTI", "was never allocated but was answered as prepared with"),
    (
        "prepare-one-claim-per-call",
        "DRA-RESTART",
        "NodePrepareResources failed as a whole: UNKNOWN: one claim per call",
    ),
    ("unprepare-keeps-cdi", "DRA-CDI-REMOVED", "still defined after unprepare"),
    ("unprepare-unknown-claim-error", "DRA-UNPREPARE-UNKNOWN", "was never prepared here"),
    ("unprepare-rejects-repeat", "DRA-UNPREPARE-IDEMPOTENT", "second unprepare of uid-a: claim uid-a is not prepared"),
    ("cdi-invalid-version", "DRA-CDI-VALID", "cdiVersion '0.0.0-defect' is not a released CDI version"),
    ("restart-renames-cdi-devices", "DRA-RESTART", "after the restart prepare gave"),
    ("prepare-first-device-only", "DRA-PREPARE", "prepared devices ['dev-0'], the allocation has ['dev-0', 'dev-1']"),
    (
        "health-stream-error",
        "DRA-HEALTH",
        "v1.DRAResourceHealth is advertised, but NodeWatchResources failed in all 6 call(s) over 25 s (last: INTERNAL: "
        "device health monitor is not running (defect health-stream-error)): the kubelet calls again every 5 s and "
        "gets no health",
    ),
    (
        "health-report-unnamed-devices",
        "DRA-HEALTH",
        "v1: the first report names no device in devices[0] (pool '', device 'dev-0'), devices[1] (pool '', device "
        "'dev-1'): a DeviceIdentifier names the pool",
    ),
]


@pytest.mark.parametrize("defect,clause,finding", DRA_DEFECTS, ids=[d for d, _, _ in DRA_DEFECTS])
def test_each_dra_driver_defect_fails_exactly_its_clause(defect, clause, finding):
    """Their answers do not depend on time: the certifier's 180 s for a claim that never recovers pass virtually."""
    cert = run_dra_driver([defect], retry_clock=VirtualClock())
    assert cert.failed_ids() == [clause], [(r.clause.id, r.message) for r in cert.results if r.verdict == FAIL]
    assert finding in next(r for r in cert.results if r.clause.id == clause).message
    assert all(v == PASS for c, v in verdicts(cert).items() if c not in (clause, "DRA-SLICES"))


def test_a_claim_a_defect_fails_forever_is_called_again_for_180_s_and_its_fail_says_so():
    """unprepare-rejects-repeat never recovers: the second unprepare fails in 10 answers over the kubelet's first
    two resyncs (2 x 90 s), and the FAIL names the rule, its source and the driver's last error."""
    cert = run_dra_driver(["unprepare-rejects-repeat"], retry_clock=VirtualClock())
    result = next(r for r in cert.results if r.clause.id == "DRA-UNPREPARE-IDEMPOTENT")
    assert (result.verdict, result.message) == (
        FAIL,
        "second unprepare of uid-a: claim uid-a is not prepared (defect unprepare-rejects-repeat) in all 10 answer(s) "
        "over 180 s; a claim failed in an OK answer must succeed when called again within 180 s, the kubelet's first "
        "two resyncs after the failure: it calls again at every sync of the terminating pod, 10-15 s apart "
        "(pkg/kubelet/kubelet.go SyncTerminatingPod fails the sync; pkg/kubelet/pod_workers.go completeWork requeues "
        "after the back-off) until it succeeds",
    )
    calls = [line for line in result.evidence if line.startswith("-> v1.DRAPlugin/NodeUnprepareResources")]
    assert len(calls) == 10
    gave_up = result.evidence.index(
        "certifier: NodeUnprepareResources still failed claim(s) ['uid-a'] after 10 answer(s) over 180 s: given up, "
        "the last error is the verdict's"
    )
    assert "claim uid-a is not prepared (defect unprepare-rejects-repeat)" in result.evidence[gave_up - 1]


def test_a_dra_driver_crash_is_one_fail_quoting_its_log_and_later_clauses_are_judged_on_their_own():
    """certify/crash.py wired in: the crash costs DRA-PREPARE-MULTI only; the subject is restarted, re-registered
    and notified, and every later clause passes."""
    cert = run_dra_driver(["prepare-crash-on-unknown-claim"])
    assert cert.failed_ids() == ["DRA-PREPARE-MULTI"]
    result = next(r for r in cert.results if r.clause.id == "DRA-PREPARE-MULTI")
    assert result.message.startswith("the subject crashed during this clause (exit 2)")
    panic = "  log: panic: NodePrepareResources: unknown claim dc-certify/not-allocated-"
    assert any(line.startswith(panic) for line in result.evidence)
    assert "certifier: the restarted subject registered again, was notified and serves" in result.evidence
    assert all(v == PASS for c, v in verdicts(cert).items() if c not in ("DRA-PREPARE-MULTI", "DRA-SLICES"))
    assert cert.notes[0] == "subject process: started 3 time(s), exit 0"


def test_without_claims_the_prepare_clauses_are_not_applicable_never_passed():
    cert = run_dra_driver(claims=[])
    got = verdicts(cert)
    assert {c: v for c, v in got.items() if v == PASS} == {
        "DRA-REG-SOCKET": PASS,
        "DRA-REG-INFO": PASS,
        "DRA-REG-NOTIFY": PASS,
        "DRA-SERVICE": PASS,
        "DRA-HEALTH": PASS,
        # A made-up claim needs no allocation: unpreparing it is checkable without claims.
        "DRA-UNPREPARE-UNKNOWN": PASS,
    }
    assert cert.failed_ids() == []
    assert len(CLAIMS) == 2


def test_the_evidence_is_the_rpc_exchange(clean_dra_driver):
    prepare = next(r for r in clean_dra_driver.results if r.clause.id == "DRA-PREPARE")
    assert prepare.evidence[0] == (
        '-> v1.DRAPlugin/NodePrepareResources [{"namespace": "ns-1", "uid": "uid-a", "name": "claim-a"}]'
    )
    assert '"cdi_device_ids": ["dra.example.com/device=uid-a-dev-0"]' in prepare.evidence[1]


def test_a_subject_that_never_starts_fails_every_clause_at_once_with_its_exit(tmp_path, plugin_root):
    from device_conformance.certify.device_plugin import DevicePluginTarget, certify_device_plugin
    from device_conformance.certify.dra_driver import DraDriverTarget, certify_dra_driver

    command = "sh -c 'echo cannot open /dev/gpu0; exit 3'"
    (plugin_root / "dp").mkdir()
    dp = certify_device_plugin(DevicePluginTarget(str(plugin_root / "dp"), command=command, workdir=tmp_path / "dp"))
    # One FAIL where registration is first awaited; it exits again when restarted, so the rest is not judged.
    assert dp.failed_ids() == ["DP-REG-VERSION"]
    assert dp.results[0].message == (
        "the subject crashed during this clause (exit 3); the check saw: no RegisterRequest reached kubelet.sock "
        "(the subject exited (exit 3) before registering)"
    )
    assert dp.results[0].evidence[0] == "the subject exited (exit 3) before registering"
    assert "  log: cannot open /dev/gpu0" in dp.results[0].evidence
    assert {r.message for r in dp.results[1:]} == {"the subject crashed at start-up, see DP-REG-VERSION"}
    assert sum(r.seconds for r in dp.results) < 10, "no clause waits for a subject that is gone"

    dra = certify_dra_driver(
        DraDriverTarget(str(plugin_root / "reg"), "x.example.com", command, CLAIMS, workdir=tmp_path / "dra")
    )
    # The same through CrashWatch: one FAIL quoting the log; the clauses needing a live subject are not judged,
    # those building on a prepared claim say which clause kept them from being checked.
    assert dra.failed_ids() == ["DRA-REG-SOCKET"]
    assert dra.results[0].message == (
        "the subject crashed during this clause (exit 3); the check saw: no registration socket for x.example.com "
        "(the subject exited (exit 3))"
    )
    assert "  log: cannot open /dev/gpu0" in dra.results[0].evidence
    assert {r.clause.id: r.message for r in dra.results if r.verdict == NOT_APPLICABLE} == {
        **{c.id: "the subject crashed at start-up, see DRA-REG-SOCKET" for c in DRA_DRIVER_CLAUSES[1:]},
        "DRA-CDI-VALID": "no claim was prepared (DRA-PREPARE)",
        "DRA-CDI-REMOVED": "no claim was unprepared (DRA-UNPREPARE)",
        "DRA-SLICES": "no API server in sanity mode (give --kubeconfig and --node to check ResourceSlices)",
    }
    assert sum(r.seconds for r in dra.results) < 10, "no clause waits for a subject that is gone"
    assert "the subject exited (exit 3)" in dra.results[0].evidence[0]


def _health(cert):
    return next(r for r in cert.results if r.clause.id == "DRA-HEALTH")


def test_a_driver_serving_both_health_versions_passes_with_what_each_first_report_names(clean_dra_driver):
    """The kubeletplugin helper's defaults from v0.37: v1 and v1alpha1 served, a first report of every device."""
    health = _health(clean_dra_driver)
    assert (health.verdict, health.message) == (
        PASS,
        "v1: reports 2 device(s) ['node-1/dev-0', 'node-1/dev-1']; v1alpha1: reports 2 device(s) ['node-1/dev-0', "
        "'node-1/dev-1']",
    )
    assert health.evidence[0] == "-> v1.DRAResourceHealth/NodeWatchResources {} (1 call(s), 0.0s)"


def test_a_driver_without_the_health_service_is_not_applicable():
    health = _health(run_dra_driver(health=None))
    assert (health.verdict, health.message) == (
        NOT_APPLICABLE,
        "advertises no DRAResourceHealth version (the service is optional)",
    )


def test_a_stream_that_sends_nothing_within_the_window_is_served_and_passes(monkeypatch):
    """No rule says when the first report comes: open and silent for the whole window is a PASS saying so."""
    monkeypatch.setattr(limits, "DRA_HEALTH_FIRST_REPORT", 1.0)
    health = _health(run_dra_driver(health=""))
    assert (health.verdict, health.message) == (
        PASS,
        "v1: open, no report within 1 s; v1alpha1: open, no report within 1 s",
    )
