"""A claim's life on the node: allocated by the real scheduler, prepared once, unprepared once, cleaned up;
failed and blocked NodePrepareResources / NodeUnprepareResources calls."""

import pytest

from device_conformance.expectations.dra import CLAIM_POD_START_TIMEOUT
from device_conformance.fakes.dra_driver import cdi
from device_conformance.kube import pods
from device_conformance.node.cri import cdi_support
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait
from device_conformance.wait.core import Pending, stays, until

pytestmark = pytest.mark.dra

POD_TIMEOUT = CLAIM_POD_START_TIMEOUT
UNPREPARE_TIMEOUT = 60
# A failed NodePrepareResources does not fail the pod sync (kuberuntime_manager.go SyncPod logs, emits the
# event and returns without an error), so the pod is retried at the resync interval: 60 s + up to 50 % jitter.
RESYNC_TIMEOUT = 120
# A failed NodeUnprepareResources is retried by the pod worker's termination loop with backoff.
RETRY_TIMEOUT = 90


def claim_uids(calls):
    """Claim UIDs of NodePrepareResources / NodeUnprepareResources calls, in call order."""
    return [uid for call in calls for uid in call.claim_uids]


def generated_claim(kube, namespace, dra_objects, pod_name):
    return dra_objects.get_claim(wait_dra.for_generated_claim(kube, namespace, pod_name, "dev"))


def test_template_claim_is_prepared_and_unprepared_once(kube, namespace, dra_driver, dra_objects, resource_api):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.pod("tmpl", template=dra_objects.template(driver.config.driver_name))
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)

    claim = generated_claim(kube, namespace, dra_objects, name)
    claim_name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"], r["device"]) for r in results] == [
        (driver.config.driver_name, driver.config.pool, "dev-0")
    ]
    assert wait_dra.reserved_uids(claim) == [pod.metadata.uid]
    prepares = driver.calls("NodePrepareResources")
    assert [c.ok for c in prepares] == [True]
    assert claim_uids(prepares) == [uid]
    assert list(driver.prepared()) == [uid]

    kube.core.delete_namespaced_pod(name, namespace)
    wait.for_pod_gone(kube, namespace, name, timeout=UNPREPARE_TIMEOUT)
    wait_dra.for_claim_gone(kube, resource_api, namespace, claim_name)
    unprepares = driver.calls("NodeUnprepareResources")
    assert claim_uids(unprepares) == [uid], "unprepared exactly once"
    assert all(c.ok for c in unprepares)
    assert driver.prepared() == {}
    assert claim_uids(driver.calls("NodePrepareResources")) == [uid], "never prepared again"


def test_container_sees_its_device_env(kube, node, namespace, dra_driver, dra_objects):
    """The driver's CDI spec (one env var pair per device) reaches the container through the runtime."""
    cdi_ok, why = cdi_support(node.runtime_info(), "the node's container runtime")
    if not cdi_ok:
        pytest.skip(f"the container runtime has no CDI, so DRA devices cannot reach containers: {why}")
    driver = dra_driver(devices=("dev-0",))
    template = dra_objects.template(driver.config.driver_name)
    # It keeps running: the generated claim of a finished pod is deleted at once.
    pod = dra_objects.pod("env", ["sh", "-c", "env | grep ^DRA_ | sort; exec sleep 86400"], template=template)
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    claim = generated_claim(kube, namespace, dra_objects, name)
    expected = sorted(cdi.device_env(namespace, claim["metadata"]["name"], claim["metadata"]["uid"], "dev-0"))

    def env_lines():
        lines = pods.logs(kube, namespace, name).split()
        return lines if len(lines) >= len(expected) else Pending(f"log so far: {lines}")

    assert until(env_lines, what=f"the DRA_ env lines of {namespace}/{name}", timeout=POD_TIMEOUT) == expected


def test_shared_claim_is_prepared_once_and_unprepared_after_the_last_pod(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    claim = dra_objects.claim(driver.config.driver_name)
    names = []
    for i in range(3):
        pod = dra_objects.pod(f"share{i}", claim=claim)
        wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
        names.append(pod.metadata.name)
    uid = dra_objects.get_claim(claim)["metadata"]["uid"]
    assert len(wait_dra.reserved_uids(dra_objects.get_claim(claim))) == 3
    assert claim_uids(driver.calls("NodePrepareResources")) == [uid], "one prepare for all pods"

    for name in names[:-1]:
        kube.core.delete_namespaced_pod(name, namespace)
        wait.for_pod_gone(kube, namespace, name, timeout=UNPREPARE_TIMEOUT)
    assert driver.calls("NodeUnprepareResources") == [], "other pods still use the claim"
    assert list(driver.prepared()) == [uid]

    kube.core.delete_namespaced_pod(names[-1], namespace)
    wait.for_pod_gone(kube, namespace, names[-1], timeout=UNPREPARE_TIMEOUT)
    driver.wait_for_call("NodeUnprepareResources", ok=True, timeout=UNPREPARE_TIMEOUT)
    assert claim_uids(driver.calls("NodeUnprepareResources")) == [uid]
    assert driver.prepared() == {}


@pytest.mark.slow  # waits for the kubelet's pod resync (60-90 s)
@pytest.mark.parametrize("per_claim", [False, True], ids=["grpc-error", "claim-error"])
def test_failed_prepare_is_retried_until_it_succeeds(kube, namespace, dra_driver, dra_objects, per_claim):
    driver = dra_driver(devices=("dev-0",))
    driver.fail_prepare("injected prepare failure", per_claim=per_claim)
    pod = dra_objects.pod("prepfail", template=dra_objects.template(driver.config.driver_name))
    name = pod.metadata.name
    driver.wait_for_call("NodePrepareResources", ok=False)
    event = wait_dra.for_event(kube, namespace, name, "FailedPrepareDynamicResources")
    assert "injected prepare failure" in event
    assert pods.read(kube, namespace, name).status.phase == "Pending"

    driver.clear_faults()
    wait.for_pod_running_ready(kube, namespace, name, timeout=RESYNC_TIMEOUT)
    assert [c.ok for c in driver.calls("NodePrepareResources")][-1] is True


def test_blocked_prepare_holds_the_pod_until_released(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.pod("blocked", template=dra_objects.template(driver.config.driver_name))
    name = pod.metadata.name
    driver.wait_for_blocked("NodePrepareResources")

    def not_started():
        current = pods.read(kube, namespace, name)
        running = [c.name for c in current.status.container_statuses or [] if c.state.running]
        return f"containers running: {running}" if running else None

    stays(not_started, what="no container to start while NodePrepareResources is blocked", duration=5)
    assert pods.read(kube, namespace, name).status.phase == "Pending"
    driver.unblock()
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)


def test_deleted_pod_stays_terminating_while_unprepare_fails(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.pod("unprepfail", template=dra_objects.template(driver.config.driver_name))
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    uid = generated_claim(kube, namespace, dra_objects, name)["metadata"]["uid"]
    driver.fail_unprepare("injected unprepare failure")

    kube.core.delete_namespaced_pod(name, namespace)
    driver.wait_for_call("NodeUnprepareResources", ok=False, timeout=UNPREPARE_TIMEOUT)
    stays(
        lambda: None if pods.read(kube, namespace, name) else "gone",
        what="the pod object to stay while its claim is not unprepared",
        duration=3,
    )
    assert list(driver.prepared()) == [uid]

    driver.clear_faults()
    wait.for_pod_gone(kube, namespace, name, timeout=RETRY_TIMEOUT)
    assert driver.prepared() == {}
    assert claim_uids(driver.calls("NodeUnprepareResources"))[-1] == uid
