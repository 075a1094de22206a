"""A claim's life on the node: allocated by the real scheduler, prepared once, unprepared once, cleaned up;
failed and blocked NodePrepareResources / NodeUnprepareResources calls."""

import pytest

from device_conformance.framework import (
    PREPARE,
    SINCE_DRA,
    UNPREPARE,
    cdi,
    cdi_support,
    claim_record,
    parse_env,
    print_env_script,
    stays,
    timeouts,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


def retried_until_ok(calls, uid, failure):
    """The claim record of calls that failed with `failure` some times, then succeeded exactly once."""
    failed = sum(1 for c in calls if c.outcome() == failure)
    return [([uid], failure)] * failed + [([uid], "ok")]


def still_there(pod):
    """A stays() probe: None while the pod object exists (deleted or not), else what happened."""
    return None if pod.read_if_present() is not None else "the pod object is gone"


@pytest.mark.scenario("DRA-E12")
def test_template_claim_is_prepared_and_unprepared_once(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("tmpl", driver)
    pod.wait_running()

    claim = pod.claim()
    claim_name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"], r["device"]) for r in results] == [
        (driver.config.driver_name, driver.config.pool, "dev-0")
    ]
    assert wait_dra.reserved_uids(claim) == [pod.uid], f"reservedFor: {claim['status'].get('reservedFor')}"
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared exactly once for the pod's start"
    assert claim_record(driver.calls(UNPREPARE)) == [], "no NodeUnprepareResources while the pod runs"
    assert list(driver.prepared()) == [uid]

    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)
    pod.wait_claim_gone(claim_name)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "unprepared exactly once"
    assert driver.prepared() == {}
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "never prepared again"


def test_container_sees_every_device_of_its_claim(node, dra_driver, dra_objects):
    """The driver's CDI spec (one env var pair per device) reaches the container through the runtime: for
    each device of a two-device claim, read from inside the container."""
    cdi_ok, why = cdi_support(node.runtime_info(), "the node's container runtime")
    if not cdi_ok:
        pytest.skip(f"the container runtime has no CDI, so DRA devices cannot reach containers: {why}")
    driver = dra_driver(devices=("dev-0", "dev-1"))
    # It keeps running: the generated claim of a finished pod is deleted at once.
    script = f"{print_env_script('DRA_')}; exec sleep 86400"
    pod = dra_objects.claim_pod("env", driver, ["sh", "-c", script], request={"count": 2})
    pod.wait_running()
    pod.log_line("END-OF-ENV")
    claim = pod.claim()
    name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    devices = pod.allocated_devices()
    assert sorted(devices) == ["dev-0", "dev-1"], f"allocated: {devices}"
    expected = sorted(line for device in devices for line in cdi.device_env(pod.namespace, name, uid, device))
    seen = parse_env(pod.logs(), "DRA_")
    assert seen == expected, "the container's DRA_ environment, one pair per device of its claim"


@pytest.mark.scenario("DRA-U1", "DRA-U2")
def test_shared_claim_is_prepared_once_and_unprepared_after_the_last_pod(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    claim = dra_objects.claim(driver.config.driver_name)
    sharing = []
    for i in range(3):
        pod = dra_objects.claim_pod(f"share{i}", claim=claim)
        pod.wait_running()
        sharing.append(pod)
        uid = pod.claim_uid()
        # One NodePrepareResources per claim, not per pod: later pods start without any call.
        assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], f"after pod {i + 1} of 3 started"
    state = sharing[0].claim()
    assert sorted(wait_dra.reserved_uids(state)) == sorted(p.uid for p in sharing)
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "one prepare for all pods"

    for pod in sharing[:-1]:
        pod.delete()
        pod.wait_gone(timeout=timeouts.UNPREPARE)
        assert claim_record(driver.calls(UNPREPARE)) == [], f"other pods still use the claim, {pod} went"
    assert list(driver.prepared()) == [uid]

    sharing[-1].delete()
    sharing[-1].wait_gone(timeout=timeouts.UNPREPARE)
    driver.wait_for_call(UNPREPARE, ok=True, timeout=timeouts.UNPREPARE)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "unprepared exactly once, after the last pod"
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "never prepared again"
    assert driver.prepared() == {}


@pytest.mark.slow  # waits for the kubelet's pod resync (60-90 s)
@pytest.mark.scenario("DRA6", "DRA-E2")  # the fault fails NodePrepareResources of v1 and v1beta1 alike
@pytest.mark.parametrize("per_claim", [False, True], ids=["grpc-error", "claim-error"])
def test_failed_prepare_is_retried_until_it_succeeds(dra_driver, dra_objects, per_claim):
    driver = dra_driver(devices=("dev-0",))
    driver.fail_prepare("injected prepare failure", per_claim=per_claim)
    pod = dra_objects.claim_pod("prepfail", driver)
    # The first prepare of a new pod may be refused (node authorizer lag) and retried at the resync.
    driver.wait_for_call(PREPARE, ok=False, timeout=timeouts.CLAIM_POD_START)
    event = pod.wait_prepare_refusal()
    assert "injected prepare failure" in event
    assert pod.read().status.phase == "Pending"

    driver.clear_faults()
    pod.wait_running(timeout=timeouts.PREPARE_RETRY_AT_RESYNC)
    prepares = driver.calls(PREPARE)
    failure = "claim error" if per_claim else "error UNKNOWN"
    assert claim_record(prepares) == retried_until_ok(prepares, pod.claim_uid(), failure)


@pytest.mark.scenario("DRA5")
def test_blocked_prepare_holds_the_pod_until_released(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.claim_pod("blocked", driver)
    # The first prepare of a new pod may be refused (node authorizer lag) and retried at the resync.
    driver.wait_for_blocked(PREPARE, timeout=timeouts.CLAIM_POD_START)

    def started(current):
        running = [c.name for c in current.status.container_statuses or [] if c.state.running]
        return f"containers running: {running}" if running else None

    pod.stays(started, what="to start no container while NodePrepareResources is blocked", duration=5)
    assert pod.read().status.phase == "Pending"
    driver.unblock()
    pod.wait_running()
    assert claim_record(driver.calls(PREPARE)) == [([pod.claim_uid()], "ok")], "the held call, and no other"


@pytest.mark.scenario("DRA10")
def test_deleted_pod_stays_terminating_while_unprepare_fails(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("unprepfail", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    driver.fail_unprepare("injected unprepare failure")

    pod.delete()
    driver.wait_for_call(UNPREPARE, ok=False, timeout=timeouts.UNPREPARE)
    stays(lambda: still_there(pod), what="the pod object to stay while its claim is not unprepared", duration=3)
    assert list(driver.prepared()) == [uid]

    driver.clear_faults()
    pod.wait_gone(timeout=timeouts.UNPREPARE_RETRY)
    assert driver.prepared() == {}
    unprepares = driver.calls(UNPREPARE)
    assert claim_record(unprepares) == retried_until_ok(unprepares, uid, "error UNKNOWN")
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared once, for the pod's only start"
