"""Black-box: the kubelet with a DRA driver it cannot see into, our fake or a vendor's.

These tests run against our fake by default and against the vendor's kubelet plugin with `--vendor-dra-driver
DRIVER --vendor-command ...` (fixtures/vendor.py `subject_driver`: its ResourceSlice published, a DeviceClass
named like the driver). They use only what any driver offers: start, SIGKILL and what the kubelet and the API
show. Exact counts of the kubelet's NodePrepareResources / NodeUnprepareResources calls come from the kubelet's
own metric `dra_grpc_operations_duration_seconds_count{driver_name, method_name}` (a client interceptor on every
call, pkg/kubelet/cm/dra/plugin/dra_plugin.go), which restarts at zero with each kubelet process. What reaches
the container is checked against the CDI devices podresources lists for the claim, resolved in the node's CDI
directory as the runtime resolves them.

Each test, the fake defect it fails on (fakes/dra_driver/config.py DEFECTS) and the failing line:
- test_claim_is_prepared_once_reaches_the_container_and_is_unprepared_once
    unprepare-keeps-cdi: `assert not left` ("CDI devices [...] are still defined in /var/run/cdi after
    NodeUnprepareResources")
- test_killed_driver_restarted_keeps_running_pods_and_prepares_new_ones
    unprepare-unknown-claim-error: `pod.wait_gone()` of the first pod (prepared by the killed process, the
    restarted one fails its NodeUnprepareResources, the kubelet retries and the pod stays Terminating)

No defect of our fake fails the other two without failing the first test too: our fake's defects change its
NodePrepareResources / NodeUnprepareResources answers or its CDI specs (fakes/dra_driver/claims.py, service.py),
and the driver's part in these two is one prepare and one unprepare of a claim by the same process, as in the
first test, which also checks the claim's CDI devices are gone (both pass with unprepare-keeps-cdi;
unprepare-unknown-claim-error fails only the unprepare of a claim another process prepared):
- test_kubelet_restart_does_not_prepare_again_and_unprepares_after: no NodePrepareResources after the restart, the
  pod running on and its claim in podresources are the kubelet's own, from its checkpoint (pkg/kubelet/cm/dra
  manager.go); the restarted kubelet registers the driver itself, walking plugins_registry at start and calling
  GetInfo on each socket there (pkg/kubelet/pluginmanager/pluginwatcher/plugin_watcher.go traversePluginDir,
  operationexecutor/operation_generator.go GenerateRegisterPluginFunc). A driver whose GetInfo fails after its
  first registration would fail it (the restarted kubelet cannot unprepare; upstream's e2e_node test of a failed
  GetInfo after a kubelet restart, kubernetes#131760): a registration defect our fake does not have.
- test_noexecute_device_taint_rule_evicts_the_pod_and_unprepares: the taint, the eviction and the pod's deletion are
  the control plane's (pkg/controller/devicetainteviction); the kubelet then unprepares as for any deleted pod.
"""

import pytest
from device_conformance.fixtures.dra_blackbox import (
    CDI_DIR,
    PRINT_ENV,
    cdi_edits,
    check_answered,
    defined_cdi_ids,
    listed_claims,
    note_cdi_not_judged,
    podresources_lists_claims,
    seen_env,
)
from device_conformance.fixtures.vendor import cdi_specs

from device_conformance.framework import (
    SINCE_DEVICE_TAINTS,
    SINCE_PODRESOURCES_DRA,
    assert_evicted,
    dra,
    pods,
    timeouts,
    watch,
)

pytestmark = [pytest.mark.dra, pytest.mark.vendor_blackbox("dra-driver")]


def _claim_devices(pod, driver):
    """(driver, pool, device) of each allocation result of the pod's claim, all of `driver`."""
    claim = pod.claim()
    results = ((claim.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []
    devices = sorted((r["driver"], r["pool"], r["device"]) for r in results)
    assert len(devices) == 1 and devices[0][0] == driver, (
        f"{pod}'s claim is allocated {devices}, one device of {driver}"
    )
    return devices


def running_env_pod(dra_objects, driver, prefix="blackbox"):
    """A pod with a claim from a template for one device of `driver`, Running, printing its environment."""
    pod = dra_objects.claim_pod(prefix, driver, PRINT_ENV)
    running = pod.wait_running()
    return pod, running


@SINCE_PODRESOURCES_DRA
@pytest.mark.scenario("DRA-E1", "DRA-E12")
def test_claim_is_prepared_once_reaches_the_container_and_is_unprepared_once(
    node, answered_calls, dra_objects, subject_driver, request, tmp_path, startup_cdi_ids
):
    """A pod with a claim runs after exactly one NodePrepareResources; podresources lists the claim with exactly
    the allocated device (or none, when the driver answered none: not judged); the environment of every CDI device
    it lists reaches the container; deleting the pod makes exactly one NodeUnprepareResources, and those CDI
    devices are no longer defined (without CDI devices, or only the driver's own, those checks are not judged)."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    pod, _ = running_env_pod(dra_objects, driver)
    allocated = _claim_devices(pod, driver)
    claim = pod.claim_name()
    assert answered_calls.since(before) == (1, 0), "one NodePrepareResources for a running claim pod"

    listed = listed_claims(pod)
    assert list(listed) == [claim], f"podresources lists claims {list(listed)} for {pod} main, expected [{claim}]"
    check_answered(request.node, [entry[:3] for entry in listed[claim]], allocated, f"podresources for claim {claim}")
    cdi_ids = [cdi_id for entry in listed[claim] for cdi_id in entry[3]]
    request.node.user_properties.append(("cdi_devices", cdi_ids))
    seen = seen_env(pod)
    specs = cdi_specs(node, tmp_path / "cdi")
    envs = {cdi_id: cdi_edits(specs, cdi_id)["env"] for cdi_id in cdi_ids}
    note_cdi_not_judged(
        request.node, f"claim {claim}", cdi_ids, startup=startup_cdi_ids, env=[e for env in envs.values() for e in env]
    )
    for cdi_id, env in envs.items():
        missing = [line for line in env if line not in seen]
        assert not missing, f"the container lacks {missing} of CDI device {cdi_id}; it sees {sorted(seen)}"

    pod.delete()
    pod.wait_gone()
    answered_calls.wait(before, (1, 1), "after the pod is gone")
    pod.wait_claim_gone(claim)
    # Claim-specific IDs only: one defined before the claim was prepared is the driver's own and may stay.
    left = defined_cdi_ids(node, tmp_path / "cdi", cdi_ids, startup_cdi_ids)
    assert not left, f"CDI devices {left} are still defined in {CDI_DIR} after NodeUnprepareResources"


@pytest.mark.disruptive
@pytest.mark.scenario("DRA1")
def test_kubelet_restart_does_not_prepare_again_and_unprepares_after(
    node, kubelet_counts, answered_calls, dra_objects, subject_driver, cluster_versions
):
    """Across a kubelet restart the claim pod keeps running, unrestarted, and podresources still lists its claim;
    the new kubelet makes no NodePrepareResources for it (upstream's window, DRA_NO_PREPARE_WINDOW); deleting the
    pod afterwards makes exactly one NodeUnprepareResources (the driver registered with the new kubelet)."""
    driver = subject_driver.driver_name
    pod, running = running_env_pod(dra_objects, driver)
    claim = pod.claim_name()
    listed = listed_claims(pod)

    node.kubelet.restart()

    def prepared_again():
        calls = kubelet_counts.dra_counts(driver, ok=None)  # any call, answered or not
        return None if calls[0] == 0 else f"(prepare, unprepare) calls {calls}"

    no_prepare = watch(
        prepared_again,
        what=f"no NodePrepareResources to {driver} after the kubelet restart",
        duration=timeouts.DRA_NO_PREPARE_WINDOW,
    )
    try:
        current = pod.read()
        main = next(s for s in current.status.container_statuses if s.name == "main")
        assert current.metadata.uid == running.metadata.uid and main.state.running and not main.restart_count, (
            f"after the kubelet restart {pod} is not the Running, never restarted pod it was: {pods.summary(current)}"
        )
        if podresources_lists_claims(cluster_versions.kubelet):  # before 1.34 it lists none: {} == {}
            assert listed_claims(pod) == listed, (
                f"after the restart podresources lists {listed_claims(pod)}, before {listed}"
            )
        no_prepare.holds()
    finally:
        no_prepare.cancel()
    pod.delete()
    pod.wait_gone()
    answered_calls.wait(None, (0, 1), "the new kubelet, after the pod is gone")
    pod.wait_claim_gone(claim)


@pytest.mark.scenario("DRA2")
def test_killed_driver_restarted_keeps_running_pods_and_prepares_new_ones(
    resource_api, kube, node, answered_calls, dra_objects, subject_driver, cluster_versions
):
    """SIGKILL of the driver, then started again: the running claim pod keeps running with its claim listed;
    a new claim pod runs after one more NodePrepareResources; deleting both unprepares each claim once."""
    from device_conformance.fixtures.vendor import wait_slices

    driver = subject_driver.driver_name
    before = answered_calls.mark()
    first, running = running_env_pod(dra_objects, driver, "first")
    listed = listed_claims(first)

    subject_driver.kill()
    subject_driver.respawn()
    wait_slices(kube, resource_api, node, driver)
    second, _ = running_env_pod(dra_objects, driver, "second")
    _claim_devices(second, driver)
    assert answered_calls.since(before) == (2, 0), "one NodePrepareResources per claim pod"
    current = first.read()
    assert current.metadata.uid == running.metadata.uid and current.status.phase == "Running", pods.summary(current)
    if podresources_lists_claims(cluster_versions.kubelet):  # before 1.34 it lists none: {} == {}
        assert listed_claims(first) == listed, (
            f"after the driver restart podresources lists {listed_claims(first)}, not {listed}"
        )

    for pod in (first, second):
        pod.delete()
    for pod in (first, second):
        pod.wait_gone()
    answered_calls.wait(before, (2, 2), "after both pods are gone")


@pytest.mark.taints
@SINCE_DEVICE_TAINTS
@pytest.mark.scenario("DT-U1")
def test_noexecute_device_taint_rule_evicts_the_pod_and_unprepares(answered_calls, dra_objects, subject_driver):
    """A NoExecute DeviceTaintRule on the pod's device evicts it (DisruptionTarget with the controller's reason
    and message, then its deletion) and the kubelet unprepares its claim exactly once."""
    driver = subject_driver.driver_name
    before = answered_calls.mark()
    pod = dra_objects.claim_pod("taint", driver, keep=True)
    pod.wait_running()
    [(_, _, device)] = _claim_devices(pod, driver)
    dra_objects.taint_rule(dra.device_taint("example.com/broken", "NoExecute"), driver=driver, device=device)
    assert_evicted(pod)
    answered_calls.wait(before, (1, 1), "after the eviction")
