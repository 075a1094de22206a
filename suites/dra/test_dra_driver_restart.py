"""The driver process SIGKILLed and started again: registration, ResourceSlices and the kubelet's wiping delay,
pods deleted while the driver is away (upstream #129402: termination waits for the driver, by design)."""

import time

import pytest

from device_conformance.framework import (
    PREPARE,
    SINCE_DRA,
    SINCE_SLICE_WIPE_ON_DISCONNECT,
    SINCE_SLICE_WIPING_DELAY,
    UNPREPARE,
    claim_record,
    dra,
    pods,
    stays,
    timeouts,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]


def slice_identity(kube, resource_api, node, driver):
    """(uid, resourceVersion) of the driver's slices on the node: any delete or update changes it."""
    items = dra.list_slices(kube, resource_api, node=node.name, driver=driver.config.driver_name)
    return [(i["metadata"]["uid"], i["metadata"]["resourceVersion"]) for i in items]


@SINCE_SLICE_WIPING_DELAY
@pytest.mark.scenario("DRA2")
def test_killed_driver_registers_again_when_restarted(node, dra_driver, dra_objects):
    """The kubelet registers the new process and serves the next pod through it (not through a connection
    to the dead one)."""
    driver = dra_driver(devices=("dev-0",))
    driver.restart(kill=True)
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    notifications = [(n.ok, n.pid) for n in driver.registrations()]
    assert [ok for ok, _ in notifications] == [True, True], f"registration verdicts: {driver.registrations()}"
    assert notifications[-1][1] == driver.pid, f"the last registration reached pid {notifications[-1][1]}"
    pod = dra_objects.claim_pod("after", driver)
    pod.wait_running()
    prepares = [(c.claim_uids, c.outcome(), c.pid) for c in driver.calls(PREPARE)]
    assert prepares == [([pod.claim_uid()], "ok", driver.pid)], "one NodePrepareResources, to the new process"


@SINCE_SLICE_WIPING_DELAY
@pytest.mark.scenario("DRA-S5")
def test_resourceslices_survive_a_restart_shorter_than_the_wiping_delay(kube, node, dra_driver, resource_api):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    before = slice_identity(kube, resource_api, node, driver)
    assert len(before) == 1, f"slices of the driver before the restart: {before}"
    killed_at = time.monotonic()
    driver.restart(kill=True)
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    remaining = timeouts.DRA_WIPING_DELAY + 5 - (time.monotonic() - killed_at)
    stays(
        lambda: (
            None
            if slice_identity(kube, resource_api, node, driver) == before
            else f"slices now {slice_identity(kube, resource_api, node, driver)}, before {before}"
        ),
        what="the ResourceSlice to stay the same object past the wiping delay",
        duration=remaining,
    )


@SINCE_SLICE_WIPE_ON_DISCONNECT
@pytest.mark.scenario("DRA-S3")
def test_resourceslices_go_when_the_driver_stays_away(kube, node, dra_driver, resource_api):
    driver = dra_driver(devices=("dev-0",))
    wait_dra.for_slice_count(kube, resource_api, node.name, driver.config.driver_name, 1)
    killed_at = time.monotonic()
    driver.kill()
    wait_dra.for_slice_count(
        kube, resource_api, node.name, driver.config.driver_name, 0, timeout=timeouts.DRA_SLICE_WIPE
    )
    waited = time.monotonic() - killed_at
    assert waited >= timeouts.DRA_WIPING_DELAY - 2, (
        f"slices wiped {waited:.0f}s after the driver died, before the wiping delay"
    )


def test_pod_deleted_while_driver_is_down_terminates_when_it_returns(dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("away", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    driver.kill()
    pod.delete()

    def terminating():
        current = pod.read_if_present()
        if current is None:
            return "the pod object is gone"
        return None if current.metadata.deletion_timestamp else f"not deleting: {pods.summary(current)}"

    stays(terminating, what="the pod to stay Terminating while the driver is away", duration=10)
    assert claim_record(driver.calls(UNPREPARE)) == [], "the driver was down: no call can have reached it"

    driver.restart()
    pod.wait_gone(timeout=timeouts.UNPREPARE_AFTER_RESTART)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "ok")], "unprepared exactly once, when it returned"
    assert driver.prepared() == {}
