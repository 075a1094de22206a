"""A claim's life on the node: allocated by the real scheduler, prepared once, unprepared once, cleaned up;
failed and blocked NodePrepareResources / NodeUnprepareResources calls."""

import pytest

from device_conformance import timeouts
from device_conformance.expectations.dra import FIRST_DRA_MINOR
from device_conformance.fakes.common.calls import summarize
from device_conformance.fakes.dra_driver import cdi
from device_conformance.node.cri import cdi_support
from device_conformance.wait import dra as wait_dra
from device_conformance.wait.core import Pending, stays, until

pytestmark = [
    pytest.mark.dra,
    pytest.mark.since(f"1.{FIRST_DRA_MINOR}", "resource.k8s.io/v1beta1, the oldest API the DRA objects fit"),
]


def claim_uids(calls):
    """Claim UIDs of NodePrepareResources / NodeUnprepareResources calls, in call order."""
    return [uid for call in calls for uid in call.claim_uids]


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
    assert wait_dra.reserved_uids(claim) == [pod.uid]
    prepares = driver.calls("NodePrepareResources")
    assert [c.ok for c in prepares] == [True]
    assert claim_uids(prepares) == [uid]
    assert list(driver.prepared()) == [uid]

    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE)
    pod.wait_claim_gone(claim_name)
    unprepares = driver.calls("NodeUnprepareResources")
    assert claim_uids(unprepares) == [uid], "unprepared exactly once"
    assert all(c.ok for c in unprepares)
    assert driver.prepared() == {}
    assert claim_uids(driver.calls("NodePrepareResources")) == [uid], "never prepared again"


def test_container_sees_its_device_env(node, dra_driver, dra_objects):
    """The driver's CDI spec (one env var pair per device) reaches the container through the runtime."""
    cdi_ok, why = cdi_support(node.runtime_info(), "the node's container runtime")
    if not cdi_ok:
        pytest.skip(f"the container runtime has no CDI, so DRA devices cannot reach containers: {why}")
    driver = dra_driver(devices=("dev-0",))
    # It keeps running: the generated claim of a finished pod is deleted at once.
    pod = dra_objects.claim_pod("env", driver, ["sh", "-c", "env | grep ^DRA_ | sort; exec sleep 86400"])
    pod.wait_running()
    claim = pod.claim()
    expected = sorted(cdi.device_env(pod.namespace, claim["metadata"]["name"], claim["metadata"]["uid"], "dev-0"))

    def env_lines():
        lines = pod.logs().split()
        return lines if len(lines) >= len(expected) else Pending(f"log so far: {lines}")

    assert until(env_lines, what=f"the DRA_ env lines of {pod}", timeout=timeouts.CLAIM_POD_START) == expected


@pytest.mark.scenario("DRA-U1", "DRA-U2")
def test_shared_claim_is_prepared_once_and_unprepared_after_the_last_pod(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    claim = dra_objects.claim(driver.config.driver_name)
    sharing = []
    for i in range(3):
        pod = dra_objects.claim_pod(f"share{i}", claim=claim)
        pod.wait_running()
        sharing.append(pod)
    state = sharing[0].claim()
    uid = state["metadata"]["uid"]
    assert len(wait_dra.reserved_uids(state)) == 3
    assert claim_uids(driver.calls("NodePrepareResources")) == [uid], "one prepare for all pods"

    for pod in sharing[:-1]:
        pod.delete()
        pod.wait_gone(timeout=timeouts.UNPREPARE)
    assert driver.calls("NodeUnprepareResources") == [], "other pods still use the claim"
    assert list(driver.prepared()) == [uid]

    sharing[-1].delete()
    sharing[-1].wait_gone(timeout=timeouts.UNPREPARE)
    driver.wait_for_call("NodeUnprepareResources", ok=True, timeout=timeouts.UNPREPARE)
    assert claim_uids(driver.calls("NodeUnprepareResources")) == [uid]
    assert driver.prepared() == {}


@pytest.mark.slow  # waits for the kubelet's pod resync (60-90 s)
@pytest.mark.scenario("DRA6")
@pytest.mark.parametrize("per_claim", [False, True], ids=["grpc-error", "claim-error"])
def test_failed_prepare_is_retried_until_it_succeeds(dra_driver, dra_objects, per_claim):
    driver = dra_driver(devices=("dev-0",))
    driver.fail_prepare("injected prepare failure", per_claim=per_claim)
    pod = dra_objects.claim_pod("prepfail", driver)
    driver.wait_for_call("NodePrepareResources", ok=False)
    event = pod.wait_event("FailedPrepareDynamicResources")
    assert "injected prepare failure" in event
    assert pod.read().status.phase == "Pending"

    driver.clear_faults()
    pod.wait_running(timeout=timeouts.PREPARE_RETRY_AT_RESYNC)
    prepares = driver.calls("NodePrepareResources")
    assert prepares and prepares[-1].ok is True, summarize(prepares)


@pytest.mark.scenario("DRA5")
def test_blocked_prepare_holds_the_pod_until_released(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.claim_pod("blocked", driver)
    driver.wait_for_blocked("NodePrepareResources")

    def started(current):
        running = [c.name for c in current.status.container_statuses or [] if c.state.running]
        return f"containers running: {running}" if running else None

    pod.stays(started, what="to start no container while NodePrepareResources is blocked", duration=5)
    assert pod.read().status.phase == "Pending"
    driver.unblock()
    pod.wait_running()


@pytest.mark.scenario("DRA10")
def test_deleted_pod_stays_terminating_while_unprepare_fails(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("unprepfail", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    driver.fail_unprepare("injected unprepare failure")

    pod.delete()
    driver.wait_for_call("NodeUnprepareResources", ok=False, timeout=timeouts.UNPREPARE)
    stays(lambda: still_there(pod), what="the pod object to stay while its claim is not unprepared", duration=3)
    assert list(driver.prepared()) == [uid]

    driver.clear_faults()
    pod.wait_gone(timeout=timeouts.UNPREPARE_RETRY)
    assert driver.prepared() == {}
    unprepared = claim_uids(driver.calls("NodeUnprepareResources"))
    assert unprepared and unprepared[-1] == uid, f"claims unprepared: {unprepared}, expected last {uid}"
