"""Black-box: a DRA driver restarted or killed around NodeUnprepareResources, our fake or a vendor's (vendor mode).

A driver's new process must unprepare claims its predecessor prepared: the kubelet sends NodeUnprepareResources for
every claim in its checkpoint whatever process answers (pkg/kubelet/cm/dra/manager.go unprepareResources), and
retries a failed or impossible call (no driver registered) until it succeeds; the pod object goes only then.
A driver restarted (as a DaemonSet's pod is, on an update or a crash) must therefore unprepare a claim its
predecessor prepared; upstream's contract after restarts is kubernetes#141966, the driver-side certify clause
DRA-UNPREPARE-UNKNOWN (docs/certify-clauses.md).

Not asserted here: that a restarted driver removes the claim's CDI spec. Upstream's test driver keeps its prepared
claims in memory only and answers NodeUnprepareResources of a claim it does not know with success without touching
the file (test/e2e/dra/test-driver/app/kubeletplugin.go nodeUnprepareResource, "Idempotent call, nothing to do");
what a restarted driver left is recorded in the test's report (user property `cdi_left_after_unprepare`).

Each test, the fake defect it fails on (fakes/dra_driver/config.py DEFECTS) and the failing line:
- test_driver_restarted_while_the_pod_runs_unprepares_its_claim_after
    unprepare-unknown-claim-error: `pod.wait_gone(...)`
- test_pod_deleted_while_the_driver_is_down_is_unprepared_once_it_is_back
    unprepare-unknown-claim-error: `pod.wait_gone(...)`
"""

import pytest
from device_conformance.fixtures.dra_blackbox import checkpointed, claim_cdi_ids, defined_cdi_ids
from device_conformance.fixtures.vendor import wait_slices

from device_conformance.framework import timeouts

pytestmark = [pytest.mark.dra, pytest.mark.vendor_blackbox("dra-driver")]


def test_driver_restarted_while_the_pod_runs_unprepares_its_claim_after(
    request, resource_api, kube, node, answered_calls, dra_objects, subject_driver, tmp_path
):
    """The driver stopped (SIGTERM) and started again while a claim pod runs; deleting the pod then makes exactly
    one NodeUnprepareResources, answered OK by the new process, the pod goes and the checkpoint no longer holds
    the claim; nothing is prepared again."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    pod = dra_objects.claim_pod("drv-restart", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    ids = claim_cdi_ids(node, driver, uid)

    subject_driver.stop()
    subject_driver.respawn()
    wait_slices(kube, resource_api, node, driver)
    pod.delete()
    pod.wait_gone(timeout=timeouts.UNPREPARE_AFTER_RESTART)
    answered_calls.wait(before, (1, 1), "after the pod is gone")
    assert uid not in checkpointed(node, driver), "dra_manager_state still holds the claim after its pod is gone"
    request.node.user_properties.append(
        ("cdi_left_after_unprepare", defined_cdi_ids(node, tmp_path / "cdi", ids, frozenset()))
    )


def test_pod_deleted_while_the_driver_is_down_is_unprepared_once_it_is_back(
    request, resource_api, kube, node, answered_calls, dra_objects, subject_driver, tmp_path
):
    """The driver SIGKILLed, then its claim pod deleted: the pod object stays while no driver can unprepare its
    claim; the driver started again, the kubelet's retry unprepares the claim exactly once (no call answered
    before), the pod goes and the checkpoint no longer holds the claim."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    pod = dra_objects.claim_pod("drv-down", driver)
    pod.wait_running()
    uid = pod.claim_uid()
    ids = claim_cdi_ids(node, driver, uid)

    subject_driver.kill()
    pod.delete()
    pod.wait_marked_for_deletion()
    assert pod.read_if_present() is not None, "the pod object went while its claim's driver was down"
    subject_driver.respawn()
    wait_slices(kube, resource_api, node, driver)
    pod.wait_gone(timeout=timeouts.UNPREPARE_RETRY)
    answered_calls.wait(before, (1, 1), "after the pod is gone")
    assert uid not in checkpointed(node, driver), "dra_manager_state still holds the claim after its pod is gone"
    request.node.user_properties.append(
        ("cdi_left_after_unprepare", defined_cdi_ids(node, tmp_path / "cdi", ids, frozenset()))
    )
