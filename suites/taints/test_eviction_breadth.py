"""Device-taint eviction beyond one claim and one taint: several claims per pod, slice taints with rules,
tolerations with and without seconds, seconds counted from the taint's timeAdded, partial tolerations,
a taint put back after a cancelled eviction, a rule's status through an eviction, a rule whose effect
goes from None to NoExecute, and what one eviction costs in API requests and controller metrics
(pkg/controller/devicetainteviction/device_taint_eviction.go, module source v1.37.1).

The one "never evicted" window (timeouts.TAINT_NO_EVICTION_WINDOW) is the module fixture
`taint_tolerated_without_seconds`; the `overlapping` marker starts it before the module's first test, and
the last test collects it, so it runs while the other tests go on.
"""

from datetime import UTC, datetime, timedelta

import pytest
from device_conformance.fixtures.dra_drivers import KEEP_FINALIZER

from device_conformance.framework import (
    NOEXECUTE_TOLERATION_IGNORED,
    SINCE_DEVICE_TAINTS,
    SINCE_RULE_STATUS,
    Abort,
    ClaimPodHandle,
    DeviceSpec,
    Pending,
    assert_evicted,
    audit,
    dra,
    evicted,
    eviction_in_progress,
    has_device_taints,
    metrics,
    pods,
    running_claim_pod,
    set_rule_effect,
    stays,
    taint,
    timeouts,
    toleration,
    until,
    until_holds,
    watch,
)

pytestmark = [pytest.mark.taints, SINCE_DEVICE_TAINTS, pytest.mark.overlapping("taint_tolerated_without_seconds")]

KEY, OTHER_KEY = "example.com/broken", "example.com/overheated"


@pytest.fixture(scope="module")
def taint_tolerated_without_seconds(request, cluster):
    """A pod tolerating its device's NoExecute taint without tolerationSeconds; the window it must stay in."""
    if not has_device_taints(cluster.k8s_version):
        yield None  # set up before the test's since marker skips it: nothing to start below the release
        return
    shared_dra = request.getfixturevalue("shared_dra")
    driver = shared_dra.driver(devices=("dev-0",))
    pod, device = running_claim_pod(shared_dra.objects, "evict", driver, tolerations=[toleration(KEY)])
    driver.set_taints(device, [taint(KEY)])
    window = watch(
        lambda: evicted(pod.read()),
        what=f"{pod} not to be evicted: it tolerates the NoExecute taint without tolerationSeconds",
        duration=timeouts.TAINT_NO_EVICTION_WINDOW,
    )
    yield window
    window.cancel()


@pytest.mark.scenario("DT-U2")
def test_pod_with_several_claims_is_evicted_for_a_taint_on_one_of_them(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    name = driver.config.driver_name
    manifest = dra.with_claims(
        pods.pod_manifest(pods.unique_name("two"), ["sleep", "86400"], finalizers=[KEEP_FINALIZER]),
        templates={"first": dra_objects.template(name), "second": dra_objects.template(name)},
    )
    created = pods.create(kube, namespace, manifest)
    try:
        second = ClaimPodHandle.of(kube, created, dra_objects.nodes, resource_api=dra_objects.api, claim_ref="second")
        second.wait_running()
        (device,) = second.allocated_devices()
        driver.set_taints(device, [taint(KEY)])
        assert_evicted(second)
    finally:
        dra_objects.release(created.metadata.name)


@pytest.mark.known_bug(NOEXECUTE_TOLERATION_IGNORED)
@pytest.mark.scenario("DT-U1", "DT-U3")
def test_rule_evicts_a_pod_that_tolerates_the_slice_taint(dra_driver, dra_objects, shows_known_bug):
    """The slice's taint is tolerated for good; a DeviceTaintRule with another key is not."""
    driver = dra_driver(devices=(DeviceSpec("dev-0", taints=[taint(KEY)]),))
    pod = dra_objects.claim_pod("evict", driver, request={"tolerations": [toleration(KEY)]}, keep=True)
    with shows_known_bug(NOEXECUTE_TOLERATION_IGNORED):  # before the fix: evicted at once, at times before it ran
        try:
            pod.wait_running()
        except Abort as exc:  # the pod ended: evicted before it was Running
            raise AssertionError(f"{pod} did not run: {exc}") from None
        pod.stays(evicted, what="to stay: it tolerates the slice's taint", duration=3)
    if evicted(pod.read()):  # only where the block above recorded the bug: the rest needs the pod it evicted
        return
    devices = pod.allocated_devices()
    assert devices == ["dev-0"], f"{pod} runs with allocated devices {devices}"
    (device,) = devices
    dra_objects.taint_rule(taint(OTHER_KEY), driver=driver.config.driver_name, device=device)
    assert_evicted(pod)


@pytest.mark.scenario("DT-U3")
def test_partial_toleration_is_no_toleration(dra_driver, dra_objects):
    """Two NoExecute taints on the device, the claim tolerates one of them: evicted at once."""
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(dra_objects, "evict", driver, tolerations=[toleration(KEY)])
    driver.set_taints(device, [taint(KEY), taint(OTHER_KEY)])
    assert_evicted(pod)


TOLERATION_SECONDS = 30
TAINTED_AGO = 20


@pytest.mark.known_bug(NOEXECUTE_TOLERATION_IGNORED)
@pytest.mark.scenario("DT-U3")
def test_toleration_seconds_count_from_the_taints_time_added(dra_driver, dra_objects, shows_known_bug):
    """The taint says it was added 20 s ago; with 30 s of toleration the pod goes ~10 s after the taint is
    published, not 30 s after."""
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(
        dra_objects, "evict", driver, tolerations=[toleration(KEY, seconds=TOLERATION_SECONDS)]
    )
    time_added = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=TAINTED_AGO)
    driver.set_taints(device, [taint(KEY, time_added=time_added)])
    due = TOLERATION_SECONDS - TAINTED_AGO
    cond = assert_evicted(pod, timeout=due + 10)
    delay = (cond.last_transition_time - time_added).total_seconds()
    with shows_known_bug(NOEXECUTE_TOLERATION_IGNORED):  # before the fix: evicted at once, ~20 s after timeAdded
        assert delay >= TOLERATION_SECONDS - 1, (
            f"evicted {delay:.0f}s after timeAdded, toleration {TOLERATION_SECONDS}s"
        )


@pytest.mark.known_bug(NOEXECUTE_TOLERATION_IGNORED)
@pytest.mark.scenario("DT-U4")
def test_taint_put_back_after_a_cancelled_eviction_evicts_again(dra_driver, dra_objects, shows_known_bug):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(dra_objects, "evict", driver, tolerations=[toleration(KEY, seconds=8)])
    driver.set_taints(device, [taint(KEY)])
    with shows_known_bug(NOEXECUTE_TOLERATION_IGNORED):  # before the fix: evicted at once, nothing to cancel
        pod.stays(evicted, what="to stay while the toleration lasts", duration=2)
    if evicted(pod.read()):  # only where the block above recorded the bug: the rest needs the pod it evicted
        return
    driver.set_taints(device, [])
    event = pod.wait_event("Cancelling deletion", timeout=timeouts.TAINT_EVICTION)
    assert "DeviceTaintManagerEviction" in event, f"cancel event: {event}"
    driver.set_taints(device, [taint(KEY)])
    assert_evicted(pod, timeout=8 + timeouts.TAINT_EVICTION)


def conditions_seen(objects, rule, until_reason, timeout):
    """Every distinct EvictionInProgress (reason, status, message) of the rule, polled until `until_reason`."""
    seen = []

    def probe():
        cond = eviction_in_progress(objects.get_rule(rule))
        if cond:
            entry = (cond["reason"], cond["status"], cond.get("message", ""))
            if not seen or seen[-1] != entry:
                seen.append(entry)
        return seen if cond and cond["reason"] == until_reason else Pending(f"seen so far: {seen}")

    return until(probe, what=f"DeviceTaintRule {rule} to report {until_reason}", timeout=timeout, interval=0.5)


@SINCE_RULE_STATUS
@pytest.mark.scenario("DT-U5")
def test_rule_status_goes_from_pending_to_completed_with_its_counts(dra_driver, dra_objects):
    """kubernetes#135611: PodsPendingEviction while the pod's toleration lasts, then Completed with the
    evicted count only, never both counts at once."""
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(dra_objects, "evict", driver, tolerations=[toleration(KEY, seconds=20)])
    rule = dra_objects.taint_rule(taint(KEY), driver=driver.config.driver_name, device=device)
    pending = ("PodsPendingEviction", "True", "1 pod needs to be evicted in 1 namespace.")
    seen = conditions_seen(dra_objects, rule, "PodsPendingEviction", timeouts.TAINT_RULE_STATUS)
    assert seen[-1] == pending, f"EvictionInProgress while the toleration lasts: {seen}"
    assert_evicted(pod, timeout=20 + timeouts.TAINT_EVICTION)
    seen = conditions_seen(dra_objects, rule, "Completed", timeouts.TAINT_RULE_STATUS)
    completed = ("Completed", "False", "1 pod evicted since starting the controller.")
    assert seen == [pending, completed], f"EvictionInProgress after the eviction: {seen}"


@SINCE_RULE_STATUS
@pytest.mark.scenario("DT-U6")
def test_rule_flipped_from_none_to_noexecute_evicts(kube, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_claim_pod(dra_objects, "evict", driver)
    rule = dra_objects.taint_rule(taint(KEY, "None"), driver=driver.config.driver_name, device=device)
    pod.stays(evicted, what="to stay under an effect-None rule", duration=3)
    set_rule_effect(kube, dra_objects, rule, "NoExecute")
    assert_evicted(pod)


DELETIONS = "device_taint_eviction_controller_pod_deletions_total"
DELETION_LATENCIES = "device_taint_eviction_controller_pod_deletion_duration_seconds_count"
# What addConditionAndDeletePod asks per evicted pod: GET it, PATCH pods/status (DisruptionTarget), DELETE it
# with a UID precondition. The kept pods' finalizer makes the DELETE answer 200 with the object.
ONE_EVICTION = [("get", "", 200), ("patch", "status", 200), ("delete", "", 200)]


def deletion_metrics(cluster) -> tuple[int, int]:
    """(pod_deletions_total, pod_deletion_duration_seconds observations) of the device-taint-eviction controller
    (pkg/controller/devicetainteviction/metrics/metrics.go), from kube-controller-manager's /metrics."""
    samples = metrics.parse(cluster.controller_manager_metrics())
    return metrics.total(samples, DELETIONS), metrics.total(samples, DELETION_LATENCIES)


@pytest.mark.scenario("DT-U6")
def test_each_eviction_is_one_get_patch_and_delete_and_one_deletion_in_the_metrics(cluster, dra_driver, dra_objects):
    """Upstream's full-controller unit tests count exactly one GET, one PATCH and one DELETE per evicted pod and
    the metrics moving with them. Here the API server's audit log counts the controller's own requests (it talks
    as its service account) and its metrics (maybeDeletePod: PodDeletionsTotal.Inc, PodDeletionsLatency.Observe)
    count two evictions, exactly; the pod on a device the rule does not select gets no request at all."""
    if cluster.audit_log is None or cluster.controller_manager_metrics is None:
        pytest.skip(
            f"provider {cluster.provider} keeps no API server audit log of the controllers' requests or cannot read "
            "kube-controller-manager's metrics (the local provider does both)"
        )
    before = deletion_metrics(cluster)
    tainted = dra_driver(devices=("dev-0", "dev-1"))
    evicted_pods = [running_claim_pod(dra_objects, "evict", tainted)[0] for _ in range(2)]
    bystander, _ = running_claim_pod(dra_objects, "evict", dra_driver(devices=("dev-0",)))
    dra_objects.taint_rule(taint(KEY), driver=tainted.config.driver_name)
    for pod in evicted_pods:
        assert_evicted(pod)

    user = audit.controller_user(audit.DEVICE_TAINT_EVICTION_CONTROLLER)
    expected = {pod.name: ONE_EVICTION for pod in evicted_pods}

    def state() -> tuple[dict, tuple[int, int]]:
        requests = audit.by_object(audit.read(cluster.audit_log), user, bystander.namespace)
        after = deletion_metrics(cluster)
        return requests, (after[0] - before[0], after[1] - before[1])

    def differs() -> str | None:
        requests, moved = state()
        if requests == expected and moved == (2, 2):
            return None
        return (
            f"the controller's requests per pod {requests}, expected {expected} (none for {bystander.name}); "
            f"(pod_deletions_total, pod_deletion_duration_seconds count) moved by {moved}, expected (2, 2)"
        )

    # An audit event is written as its request completes, possibly after the client saw the answer.
    until_holds(
        differs,
        what="one GET, PATCH and DELETE per evicted pod and two deletions in the metrics",
        timeout=timeouts.TAINT_RULE_STATUS,
    )
    # Exactly: no second request (a retry, a second eviction) while the rule's status is rewritten once.
    stays(differs, what="no further request or deletion", duration=timeouts.DEVICE_TAINT_RULE_STATUS_PERIOD)


@pytest.mark.known_bug(NOEXECUTE_TOLERATION_IGNORED)
@pytest.mark.scenario("DT-U3")
def test_toleration_without_seconds_is_never_evicted(taint_tolerated_without_seconds, shows_known_bug):
    """Collected last, so the window runs while the module's other tests go on (it has run since before the
    module's first test, and holds() blocks for what is left of it)."""
    with shows_known_bug(NOEXECUTE_TOLERATION_IGNORED):  # before the fix: evicted at once
        taint_tolerated_without_seconds.holds()
