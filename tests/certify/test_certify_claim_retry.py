"""How long the certifier calls again for a claim a DRA driver failed in an OK answer (dra_driver.py _call): as the
kubelet, which calls again at every pod sync (60-90 s apart) without limit, it gives up only after the kubelet's
first two resyncs (180 s). A stub driver answers from a virtual clock, so the whole policy runs in no time."""

from certify_subjects import VirtualClock

from device_conformance.certify import limits
from device_conformance.certify.clauses import BY_ID
from device_conformance.certify.dra_driver import DraDriverCertifier, DraDriverTarget, RetryClock
from device_conformance.certify.verdicts import FAIL, PASS, run_step
from device_conformance.protos.dra.v1 import api_pb2 as pb

CLAIM = ("ns-1", "uid-a", "claim-a")
BUSY = "error acquiring prep/unprep lock: timeout"
# What each verdict that gives up adds: the rule and where the kubelet calls again.
PREPARE_RULE = (
    "a claim failed in an OK answer must succeed when called again within 180 s, the kubelet's first two resyncs "
    "after the failure: it calls again at every sync of the pod, 60-90 s apart (pkg/kubelet/kuberuntime/"
    "kuberuntime_manager.go SyncPod returns without failing the sync; pkg/kubelet/pod_workers.go completeWork requeues "
    "at the resync) until it succeeds"
)
UNPREPARE_RULE = (
    "a claim failed in an OK answer must succeed when called again within 180 s, the kubelet's first two resyncs "
    "after the failure: it calls again at every sync of the terminating pod, 10-15 s apart (pkg/kubelet/kubelet.go "
    "SyncTerminatingPod fails the sync; pkg/kubelet/pod_workers.go completeWork requeues after the back-off) until "
    "it succeeds"
)


class StubDriver:
    """KubeletClient's prepare/unprepare: each claim's error comes from failing(method, uid, now) ("" = success),
    every call is recorded at the virtual time it came."""

    def __init__(self, clock: VirtualClock, failing) -> None:
        self.clock, self.failing, self.calls = clock, failing, []

    def _answer(self, method: str, claims, response, fill=None):
        self.calls.append((method, self.clock.now(), [c[1] for c in claims]))
        for _, uid, _ in claims:
            error = self.failing(method, uid, self.clock.now())
            entry = response.claims[uid]
            entry.error = error
            if not error and fill:
                fill(entry)
        return response

    def prepare(self, claims, **_):
        def device(entry):
            entry.devices.add(pool_name="node-1", device_name="dev-0", cdi_device_ids=["example.com/device=dev-0"])

        return self._answer("NodePrepareResources", claims, pb.NodePrepareResourcesResponse(), device)

    def unprepare(self, claims, **_):
        return self._answer("NodeUnprepareResources", claims, pb.NodeUnprepareResourcesResponse())

    def times(self, method: str) -> list[float]:
        return [t for m, t, _ in self.calls if m == method]


def certifier(tmp_path, failing):
    clock = VirtualClock()
    target = DraDriverTarget(
        registry_dir="/nonexistent",
        driver="dra.example.com",
        claims=[CLAIM],
        cdi_dir=str(tmp_path),
        retry_clock=RetryClock(clock.now, clock.sleep),
    )
    cert = DraDriverCertifier(target)
    cert.registration_socket, cert.service = "reg.sock", "v1.DRAPlugin"
    cert.client = StubDriver(clock, failing)
    return cert


def step(cert, clause: str, method):
    return run_step(BY_ID[clause], method)


# The kubelet's first two resyncs after a failure: the calls the certifier makes for a claim that never recovers.
SCHEDULE = [0.0, 2.0, 6.0, 14.0, 30.0, 60.0, 90.0, 120.0, 150.0, 180.0]


def test_the_policy_comes_from_the_kubelets_resync():
    assert limits.DRA_FAILED_CLAIM_RETRY_FOR == 2 * limits.KUBELET_RESYNC_MAX == 180.0
    assert (limits.DRA_FAILED_CLAIM_FIRST_PAUSE, limits.DRA_FAILED_CLAIM_MAX_PAUSE) == (2.0, 30.0)


def test_a_claim_failed_for_100_s_is_prepared_on_the_first_call_after_it_recovers(tmp_path):
    """3 calls 2 s apart gave up at 6 s; a real kubelet starts this pod at its second resync."""
    cert = certifier(tmp_path, lambda method, uid, now: BUSY if now < 100 else "")
    result = step(cert, "DRA-PREPARE", cert.prepare)
    assert (result.verdict, result.message) == (
        PASS,
        f"claim ns-1/claim-a: 1 device(s) (after 7 failed answer(s) [{BUSY!r}], which the kubelet calls again for)",
    )
    assert cert.client.times("NodePrepareResources") == [*SCHEDULE[:7], 120.0]
    assert result.evidence[2] == (
        "note: NodePrepareResources failed claim(s) ['uid-a'] in an OK answer; the kubelet calls again for them, and "
        "so does the certifier (retry 1 in 2 s, 2 s after the first call; the kubelet's is its next pod sync, "
        "60-90 s; the certifier gives up at 180 s)"
    )


def test_a_claim_that_recovers_at_once_is_called_again_after_2_s(tmp_path):
    cert = certifier(tmp_path, lambda method, uid, now: BUSY if now < 1 else "")
    assert step(cert, "DRA-PREPARE", cert.prepare).verdict == PASS
    assert cert.client.times("NodePrepareResources") == [0.0, 2.0]


def test_a_claim_that_never_recovers_fails_after_the_kubelets_first_two_resyncs_quoting_the_last_error(tmp_path):
    errors = iter(f"{BUSY} ({n})" for n in range(100))
    cert = certifier(tmp_path, lambda method, uid, now: next(errors))
    result = step(cert, "DRA-PREPARE", cert.prepare)
    assert (result.verdict, result.message) == (
        FAIL,
        f"claim uid-a: error '{BUSY} (9)' in all 10 answer(s) over 180 s; {PREPARE_RULE}",
    )
    assert cert.client.times("NodePrepareResources") == SCHEDULE
    assert result.evidence[-1] == (
        "certifier: NodePrepareResources still failed claim(s) ['uid-a'] after 10 answer(s) over 180 s: given up, "
        "the last error is the verdict's"
    )


def test_a_claim_given_up_on_is_not_waited_for_again_until_it_succeeds(tmp_path):
    """DRA-RESTART prepares the claim DRA-PREPARE gave up on: one more answer, not another 180 s."""
    cert = certifier(tmp_path, lambda method, uid, now: BUSY)
    assert step(cert, "DRA-PREPARE", cert.prepare).verdict == FAIL
    result = step(cert, "DRA-PREPARE", cert.prepare)
    assert (result.verdict, result.message) == (
        FAIL,
        f"claim uid-a: error {BUSY!r} in all 10 answer(s) over 180 s when first called (not waited for again); "
        f"{PREPARE_RULE}",
    )
    assert cert.client.times("NodePrepareResources") == [*SCHEDULE, 180.0]
    assert result.evidence[-1] == (
        "certifier: NodePrepareResources still failed claim(s) ['uid-a'] after 1 answer(s) over 0 s (given up on "
        "before, not waited for again): given up, the last error is the verdict's"
    )


def test_a_claim_that_succeeded_since_it_was_given_up_on_gets_the_whole_wait_again(tmp_path):
    cert = certifier(tmp_path, lambda method, uid, now: BUSY if now < 200 or 300 <= now < 400 else "")
    assert step(cert, "DRA-PREPARE", cert.prepare).verdict == FAIL
    cert.client.clock.time = 250.0
    assert step(cert, "DRA-PREPARE", cert.prepare).verdict == PASS
    cert.client.clock.time = 300.0
    assert step(cert, "DRA-PREPARE", cert.prepare).verdict == PASS
    assert cert.client.times("NodePrepareResources")[-8:] == [300.0 + t for t in SCHEDULE[:7]] + [420.0]


def test_unprepare_that_never_recovers_names_the_kubelets_unprepare_retry(tmp_path):
    cert = certifier(tmp_path, lambda method, uid, now: "busy" if method == "NodeUnprepareResources" else "")
    assert step(cert, "DRA-PREPARE", cert.prepare).verdict == PASS
    result = step(cert, "DRA-UNPREPARE", cert.unprepare)
    assert (result.verdict, result.message) == (
        FAIL,
        f"unprepare: ['uid-a: busy'] in all 10 answer(s) over 180 s; {UNPREPARE_RULE}",
    )
    again = step(cert, "DRA-UNPREPARE-IDEMPOTENT", cert.unprepare_again)
    assert (again.verdict, again.message) == (
        FAIL,
        f"second unprepare of uid-a: busy in all 10 answer(s) over 180 s when first called (not waited for again); "
        f"{UNPREPARE_RULE}",
    )
    assert cert.client.times("NodeUnprepareResources") == [*SCHEDULE, 180.0]


def test_a_made_up_claims_error_is_judged_at_once(tmp_path):
    """DRA-PREPARE-MULTI: the made-up claim's error is the answer wanted, never called again."""
    cert = certifier(tmp_path, lambda method, uid, now: "" if uid == "uid-a" else "no such claim")
    assert step(cert, "DRA-PREPARE-MULTI", cert.prepare_multi).verdict == PASS
    assert [len(uids) for _, _, uids in cert.client.calls] == [2]
