"""The driver process SIGKILLed and started again: registration, ResourceSlices and the kubelet's wiping delay,
pods deleted while the driver is away (upstream #129402: termination waits for the driver, by design)."""

import time

import pytest

from device_conformance.expectations.dra import CLAIM_POD_START_TIMEOUT
from device_conformance.kube import dra, pods
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait
from device_conformance.wait.core import stays

pytestmark = pytest.mark.dra

POD_TIMEOUT = CLAIM_POD_START_TIMEOUT
REGISTRATION_TIMEOUT = 30
# The kubelet deletes a driver's ResourceSlices 30 s after its last plugin disconnected (defaultWipingDelay).
WIPING_DELAY = 30
WIPE_TIMEOUT = WIPING_DELAY + 20
UNPREPARE_TIMEOUT = 90


def slice_identity(kube, resource_api, node, driver):
    """(uid, resourceVersion) of the driver's slices on the node: any delete or update changes it."""
    items = dra.list_slices(kube, resource_api, node=node.name, driver=driver.config.driver_name)
    return [(i["metadata"]["uid"], i["metadata"]["resourceVersion"]) for i in items]


def test_killed_driver_registers_again_when_restarted(node, dra_driver):
    driver = dra_driver(devices=("dev-0",))
    first_pid = driver.pid
    driver.restart(kill=True)
    assert driver.pid != first_pid
    driver.wait_for_registration(count=2, timeout=REGISTRATION_TIMEOUT)
    notifications = driver.registrations()
    assert [n.ok for n in notifications] == [True, True]
    assert notifications[-1].pid == driver.pid


def test_resourceslices_survive_a_restart_shorter_than_the_wiping_delay(kube, node, dra_driver, resource_api):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    before = slice_identity(kube, resource_api, node, driver)
    assert len(before) == 1
    killed_at = time.monotonic()
    driver.restart(kill=True)
    driver.wait_for_registration(count=2, timeout=REGISTRATION_TIMEOUT)
    remaining = WIPING_DELAY + 5 - (time.monotonic() - killed_at)
    stays(
        lambda: (
            None
            if slice_identity(kube, resource_api, node, driver) == before
            else f"slices now {slice_identity(kube, resource_api, node, driver)}, before {before}"
        ),
        what="the ResourceSlice to stay the same object past the wiping delay",
        duration=remaining,
    )


def test_resourceslices_go_when_the_driver_stays_away(kube, node, dra_driver, resource_api):
    driver = dra_driver(devices=("dev-0",))
    wait_dra.for_slice_count(kube, resource_api, node.name, driver.config.driver_name, 1)
    killed_at = time.monotonic()
    driver.kill()
    wait_dra.for_slice_count(kube, resource_api, node.name, driver.config.driver_name, 0, timeout=WIPE_TIMEOUT)
    waited = time.monotonic() - killed_at
    assert waited >= WIPING_DELAY - 2, f"slices wiped {waited:.0f}s after the driver died, before the wiping delay"


def test_pod_deleted_while_driver_is_down_terminates_when_it_returns(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.pod("away", template=dra_objects.template(driver.config.driver_name))
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)
    uid = dra_objects.get_claim(wait_dra.for_generated_claim(kube, namespace, name, "dev"))["metadata"]["uid"]
    driver.kill()
    kube.core.delete_namespaced_pod(name, namespace)

    def terminating():
        current = pods.read(kube, namespace, name)
        return None if current.metadata.deletion_timestamp else f"not deleting: {pods.summary(current)}"

    stays(terminating, what="the pod to stay Terminating while the driver is away", duration=10)
    assert driver.calls("NodeUnprepareResources") == []

    driver.restart()
    wait.for_pod_gone(kube, namespace, name, timeout=UNPREPARE_TIMEOUT)
    unprepares = driver.calls("NodeUnprepareResources")
    assert [c.request["claims"][0]["uid"] for c in unprepares if c.ok] == [uid]
    assert driver.prepared() == {}
