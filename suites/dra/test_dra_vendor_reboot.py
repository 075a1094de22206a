"""Black-box: node reboots around a DRA driver, our fake or a vendor's (vendor mode: --vendor-dra-driver).

The kubelet keeps a claim's "prepared" flag only in memory (pkg/kubelet/cm/dra/claiminfo.go: a ClaimInfo restored
from dra_manager_state starts with prepared false), and calls PrepareDynamicResources only when it creates a pod
sandbox (pkg/kubelet/kuberuntime/kuberuntime_manager.go SyncPod). So after a reboot, where every sandbox is gone,
the kubelet calls NodePrepareResources again for a claim the driver already prepared, before the new containers
start: the driver must answer it as it did (idempotence, kubernetes#141966), and where the reboot emptied
/var/run/cdi, write the claim's CDI spec again (kubernetes#141433). Upstream's simulation (test/e2e_node
dra_test.go): kubelet stopped, every pod sandbox removed through CRI, kubelet started (NodeControl.simulate_reboot).
A claim prepared with no CDI device (dra/v1 api.proto allows it) leaves the CDI checks nothing to judge: they are
recorded as not judged (note_cdi_not_judged), the prepare calls and the new container are judged.

Each test, the fake defect it fails on (fakes/dra_driver/config.py DEFECTS) and the failing line:
- test_reboot_with_the_driver_running_prepares_the_claim_again
    prepare-rejects-repeat: `wait_new_container(...)` (FailedPrepareDynamicResources "already prepared")
- test_reboot_with_lost_cdi_specs_and_the_driver_back_late
    prepare-keeps-lost-cdi-spec: `wait_new_container(...)` (CDI device injection failed: unresolvable CDI devices)
"""

import pytest
from device_conformance.fixtures.dra_blackbox import (
    PRINT_ENV,
    cdi_env,
    claim_cdi_ids,
    main_status,
    note_cdi_not_judged,
    remove_cdi_specs,
    seen_env,
    undefined_cdi_ids,
    wait_new_container,
)
from device_conformance.fixtures.vendor import wait_slices

from device_conformance.framework import timeouts

pytestmark = [pytest.mark.dra, pytest.mark.disruptive, pytest.mark.vendor_blackbox("dra-driver")]


def running_cdi_pod(node, dra_objects, driver, prefix, request, tmp_path):
    """A claim pod (one device, restartPolicy Always) printing its environment, Running, with its claim's CDI IDs
    (the kubelet's DRA checkpoint, claim_cdi_ids) and the env lines their CDI specs give (the CDI checks without
    any recorded as not judged)."""
    pod = dra_objects.claim_pod(prefix, driver, PRINT_ENV, restart_policy="Always")
    pod.wait_running()
    ids = claim_cdi_ids(node, driver, pod.claim_uid())
    expected = cdi_env(node, tmp_path / "cdi", ids)
    note_cdi_not_judged(request.node, f"claim {pod.claim_name()}", ids, env=expected)
    return pod, ids, expected


def test_reboot_with_the_driver_running_prepares_the_claim_again(
    node, answered_calls, dra_objects, subject_driver, cdi_runtime, kubelet_restored, tmp_path, request
):
    """After a node reboot (the driver kept running) the new kubelet calls NodePrepareResources for the running
    pod's claim exactly once, answered OK, and the pod's new container runs and sees the CDI environment of its
    claim again; no NodeUnprepareResources for a pod that stays."""
    driver = subject_driver.driver_name
    pod, ids, expected = running_cdi_pod(node, dra_objects, driver, "reboot", request, tmp_path)
    assert set(expected) <= seen_env(pod), f"before the reboot the container lacks {set(expected) - seen_env(pod)}"
    old = main_status(pod).container_id

    removed = node.simulate_reboot()
    assert removed >= 1, f"the reboot simulation removed {removed} pod sandboxes"
    wait_new_container(pod, old, timeouts.PREPARE_RETRY_AT_RESYNC)
    assert answered_calls.since() == (1, 0), "the new kubelet prepares the claim once, unprepares none"
    missing = set(expected) - seen_env(pod)
    assert not missing, f"after the reboot the new container lacks {sorted(missing)} of CDI devices {ids}"


def test_reboot_with_lost_cdi_specs_and_the_driver_back_late(
    node,
    resource_api,
    kube,
    answered_calls,
    dra_objects,
    subject_driver,
    cdi_runtime,
    kubelet_restored,
    tmp_path,
    request,
):
    """A reboot as it is: the driver goes down too, /var/run/cdi (tmpfs) loses the claim's CDI specs, the kubelet
    comes back first and the driver later. Once the driver is back, the kubelet prepares the claim again (one
    NodePrepareResources answered OK), the driver writes its CDI specs again, and the new container runs and sees
    the same CDI environment as before the reboot."""
    driver = subject_driver.driver_name
    pod, ids, expected = running_cdi_pod(node, dra_objects, driver, "late", request, tmp_path)
    assert set(expected) <= seen_env(pod), f"before the reboot the container lacks {set(expected) - seen_env(pod)}"
    old = main_status(pod).container_id

    subject_driver.stop()
    removed_specs = remove_cdi_specs(node, tmp_path / "cdi", ids)
    removed = node.simulate_reboot()
    assert removed >= 1, f"the reboot simulation removed {removed} pod sandboxes"
    subject_driver.respawn()
    wait_slices(kube, resource_api, node, driver)
    wait_new_container(pod, old, timeouts.PREPARE_RETRY_AT_RESYNC)
    assert answered_calls.since() == (1, 0), "the new kubelet prepares the claim once, unprepares none"
    assert undefined_cdi_ids(node, tmp_path / "cdi", ids) == [], (
        f"CDI devices of the claim are not defined again after the reboot (spec files removed: {removed_specs})"
    )
    missing = set(expected) - seen_env(pod)
    assert not missing, f"after the reboot the new container lacks {sorted(missing)} of CDI devices {ids}"
