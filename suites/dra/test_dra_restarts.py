"""DRA across node reboots, kubelet restarts and kubelet crashes: what the kubelet must call again, and what it
must not, and what the containers it starts then see of their claims.

A node reboot (upstream's simulation: kubelet stopped, every pod sandbox removed through CRI, kubelet started)
loses the prepared flag, which lives only in memory: the kubelet calls NodePrepareResources again before the
new sandbox's containers start (kubernetes#119850, fixed by #120550; a guarantee drivers rely on, #141966).
A real reboot also empties /var/run/cdi: the driver writes the claim's CDI spec again in that call
(kubernetes#141433; `prepare-keeps-lost-cdi-spec` is the fake driver with that bug).
"""

import os

import pytest
from device_conformance.fixtures.dra_blackbox import main_status, wait_new_container
from device_conformance.fixtures.dra_pods import PRINT_DRA_ENV, allocation, claim_with_requests, claims_pod, seen_env

from device_conformance.framework import (
    PREPARE,
    SINCE_DRA,
    UNPREPARE,
    ClaimPodHandle,
    cdi,
    claim_record,
    dra,
    pods,
    prepare_held_across,
    timeouts,
    wait_dra,
)

pytestmark = [pytest.mark.dra, pytest.mark.disruptive, SINCE_DRA]


def expected_env(pod):
    claim = pod.claim()
    name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    return sorted(line for d in pod.allocated_devices() for line in cdi.device_env(pod.namespace, name, uid, d))


def test_node_reboot_prepares_the_claim_again_before_the_new_containers_start(
    node, dra_driver, dra_objects, cdi_runtime, kubelet_restored
):
    """The claim's CDI spec goes as /var/run/cdi does in a reboot; the new sandbox's container sees every
    device again only if NodePrepareResources (which writes the spec) came before it was created."""
    driver = dra_driver(devices=("dev-0", "dev-1"))
    script = f"{PRINT_DRA_ENV}; exec sleep 86400"
    pod = dra_objects.claim_pod("reboot", driver, ["sh", "-c", script], request={"count": 2}, restart_policy="Always")
    pod.wait_running()
    expected = expected_env(pod)
    assert seen_env(pod) == expected, "the container's DRA_ environment before the reboot"
    uid, before = pod.claim_uid(), main_status(pod).container_id
    os.remove(driver.prepared()[uid]["cdi_spec"])  # tmpfs: gone with the reboot

    removed = node.simulate_reboot()
    assert removed >= 1, f"the reboot simulation removed {removed} pod sandboxes"
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    status = wait_new_container(pod, before, timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART)

    prepares = driver.calls(PREPARE)
    assert claim_record(prepares) == [([uid], "ok"), ([uid], "ok")], "one NodePrepareResources after the reboot"
    started = status.state.running.started_at.timestamp()
    # startedAt has whole seconds: the call ended before the second the container started in ended.
    assert prepares[1].ended_wall <= started + 1, (
        f"NodePrepareResources after the reboot ended at {prepares[1].ended_wall:.3f}, "
        f"the new container started at {started:.0f}"
    )
    assert seen_env(pod) == expected, "the new container's DRA_ environment after the reboot"
    assert claim_record(driver.calls(UNPREPARE)) == [], "no NodeUnprepareResources for a pod that kept running"


@pytest.mark.scenario("DRA-E13")
def test_container_restarted_after_a_kubelet_restart_gets_every_cdi_device(
    node, dra_driver, dra_objects, cdi_runtime, kubelet_restored
):
    """The container ends after the kubelet restart (a file the test writes on the node); the kubelet starts it
    again with the CDI devices from its dra_manager_state, without calling the driver."""
    driver = dra_driver(devices=("dev-0", "dev-1"))
    trigger = f"/var/lib/kubelet/dc-trigger-{os.urandom(4).hex()}"  # a node directory (hostPath)
    script = (
        f"{PRINT_DRA_ENV}; [ -e /scratch/again ] && exec sleep 86400; touch /scratch/again; "
        "until [ -e /trigger/exit ]; do sleep 1; done; exit 1"
    )
    try:
        pod = trigger_pod(dra_objects, driver, script, trigger)
        pod.wait_running()
        expected = expected_env(pod)
        claim = pod.claim()
        claim_name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
        assert seen_env(pod) == expected, "the container's DRA_ environment before the kubelet restart"

        node.kubelet.restart()
        driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
        node.write_file(f"{trigger}/exit", b"")
        pod.wait_restarted(timeout=timeouts.POD_START)
        pod.wait_running()
        assert seen_env(pod) == expected, "the restarted container's DRA_ environment"
        assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "no NodePrepareResources for a restart"
        after = pod.claim()
        assert (after["metadata"]["name"], after["metadata"]["uid"]) == (claim_name, uid), (
            "the generated claim was replaced while its pod restarted a container"
        )
        assert not after["metadata"].get("deletionTimestamp"), "the generated claim is being deleted"
    finally:
        node.delete_file(f"{trigger}/exit")
        node.delete_dir(trigger)


def trigger_pod(dra_objects, driver, script, trigger):
    """A pod with a two-device claim from a template, `trigger` (a node directory) at /trigger and an emptyDir
    at /scratch (kept across container restarts)."""
    template = dra_objects.template(driver.config.driver_name, count=2)
    manifest = pods.pod_manifest(pods.unique_name("ctr-restart"), ["sh", "-c", script], restart_policy="Always")
    manifest = dra.with_claims(manifest, templates={"dev": template})
    spec = manifest["spec"]
    spec["volumes"] = [
        {"name": "trigger", "hostPath": {"path": trigger, "type": "DirectoryOrCreate"}},
        {"name": "scratch", "emptyDir": {}},
    ]
    spec["containers"][0]["volumeMounts"] = [
        {"name": "trigger", "mountPath": "/trigger"},
        {"name": "scratch", "mountPath": "/scratch"},
    ]
    created = pods.create(dra_objects.kube, dra_objects.namespace, manifest)
    return ClaimPodHandle.of(dra_objects.kube, created, dra_objects.nodes, resource_api=dra_objects.api)


@pytest.mark.scenario("DRA4")
def test_pod_created_while_the_kubelet_is_down_runs_once_it_starts(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    with node.kubelet.stopped():
        pod = dra_objects.claim_pod("while-down", driver)
        pod.wait_claim(lambda c: bool(wait_dra.reserved_uids(c)), "to be allocated and reserved for the pod")
        assert driver.calls(PREPARE) == [], "NodePrepareResources while the kubelet is down"
        assert pod.read().status.phase == "Pending"
    pod.wait_running(timeout=timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART)
    assert claim_record(driver.calls(PREPARE)) == [([pod.claim_uid()], "ok")], "prepared once, by the new kubelet"


@pytest.mark.scenario("DRA9")
def test_failed_unprepare_is_retried_after_a_kubelet_restart(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("unprep-restart", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    driver.fail_unprepare("injected unprepare failure")
    pod.delete()
    driver.wait_for_call(UNPREPARE, ok=False, timeout=timeouts.UNPREPARE)
    with node.kubelet.stopped():
        driver.clear_faults()
        failed = len(driver.calls(UNPREPARE))
    pod.wait_gone(timeout=timeouts.UNPREPARE_AFTER_RESTART)
    expected = [([uid], "error UNKNOWN")] * failed + [([uid], "ok")]
    assert claim_record(driver.calls(UNPREPARE)) == expected, "one successful NodeUnprepareResources after the restart"
    assert driver.prepared() == {}


def test_kubelet_sigkilled_during_prepare_prepares_again(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    driver.block_prepare()
    pod = dra_objects.claim_pod("kill-prep", driver)
    uid = prepare_held_across(driver, pod, node.kubelet.crash)
    assert claim_record(driver.calls(PREPARE)) == [([uid], "error CANCELLED"), ([uid], "ok")], (
        "the killed kubelet's call, then exactly one from the new kubelet"
    )
    assert list(driver.prepared()) == [uid]


def test_kubelet_sigkilled_during_unprepare_unprepares_again(node, dra_driver, dra_objects, kubelet_restored):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("kill-unprep", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    driver.block_unprepare()
    pod.delete()
    driver.wait_for_blocked(UNPREPARE, timeout=timeouts.UNPREPARE)
    node.kubelet.crash()
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)
    driver.wait_for_call(UNPREPARE, count=2, timeout=timeouts.UNPREPARE_AFTER_RESTART)
    driver.wait_for_blocked(UNPREPARE)
    assert pod.read_if_present() is not None, "the pod object went before its claim was unprepared"
    driver.unblock()
    pod.wait_gone(timeout=timeouts.UNPREPARE_AFTER_RESTART)
    assert claim_record(driver.calls(UNPREPARE)) == [([uid], "error CANCELLED"), ([uid], "ok")], (
        "the killed kubelet's call, then exactly one from the new kubelet"
    )
    assert driver.prepared() == {}
    assert claim_record(driver.calls(PREPARE)) == [([uid], "ok")], "prepared once, for the pod's only start"


@pytest.mark.scenario("DRA-T6")
def test_unprepare_held_for_one_of_two_drivers_across_a_kubelet_restart_is_called_again(
    node, dra_driver, dra_objects, kubelet_restored
):
    a = dra_driver(devices=("a-0",))
    b = dra_driver(devices=("b-0",))
    pair = claim_with_requests(dra_objects, {"first": a.config.driver_name, "second": b.config.driver_name})
    pod = claims_pod(dra_objects, "t6", {"pair": pair}, {"main": ["pair"]}, command=["sleep", "86400"])
    pod.wait_running(timeout=timeouts.CLAIM_POD_START)
    uid = allocation(dra_objects, pair)[0]
    b.block_unprepare()
    pod.delete()
    b.wait_for_blocked(UNPREPARE, timeout=timeouts.UNPREPARE)
    node.kubelet.restart()
    b.wait_for_call(UNPREPARE, count=2, timeout=timeouts.UNPREPARE_AFTER_RESTART)
    b.wait_for_blocked(UNPREPARE)
    assert pod.read_if_present() is not None, "the pod object went before driver b unprepared its claim"
    b.unblock()
    pod.wait_gone(timeout=timeouts.UNPREPARE_AFTER_RESTART)
    assert claim_record(b.calls(UNPREPARE)) == [([uid], "error CANCELLED"), ([uid], "ok")], (
        "the call held across the restart, then exactly one from the restarted kubelet"
    )
    # Driver a answered before the restart; the restarted kubelet may ask it again (unprepare is idempotent).
    outcomes = {tuple(uids): outcome for uids, outcome in claim_record(a.calls(UNPREPARE))}
    assert outcomes == {(uid,): "ok"}, f"driver a: {claim_record(a.calls(UNPREPARE))}"
    assert (a.prepared(), b.prepared()) == ({}, {})
    assert [claim_record(d.calls(PREPARE)) for d in (a, b)] == [[([uid], "ok")]] * 2, "prepared once per driver"
