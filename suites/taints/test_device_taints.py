"""Device taints against the real scheduler and device-taint-eviction controller, devices from the fake driver.

Evicted pods are held by a finalizer (keep=True) so their DisruptionTarget condition stays readable.
"""

from datetime import datetime

import pytest

from device_conformance.expectations.dra import CLAIM_POD_START_TIMEOUT, has_none_taint_effect
from device_conformance.fakes.dra_driver import DeviceSpec
from device_conformance.kube import dra, pods
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait
from device_conformance.wait.core import stays

pytestmark = pytest.mark.taints

KEY = "example.com/broken"
POD_TIMEOUT = CLAIM_POD_START_TIMEOUT
EVICTION_TIMEOUT = 30
EVICTION_REASON = "DeletionByDeviceTaintManager"
EVICTION_MESSAGE = "Device Taint manager: deleting due to NoExecute taint"
TOLERATION_SECONDS = 8
RULE_STATUS_TIMEOUT = 30  # the controller refreshes rule status every 10 s (ruleStatusPeriod)


def running_pod(kube, namespace, dra_objects, driver, **request):
    """A kept pod with a claim from a template; returns (pod, allocated device name)."""
    template = dra_objects.template(driver.config.driver_name, **request)
    pod = dra_objects.pod("taint", template=template, keep=True)
    pod = wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    claim = dra_objects.get_claim(wait_dra.for_generated_claim(kube, namespace, pod.metadata.name, "dev"))
    (result,) = claim["status"]["allocation"]["devices"]["results"]
    return pod, result["device"]


def assert_evicted(kube, namespace, name, timeout=EVICTION_TIMEOUT):
    cond = wait_dra.for_pod_condition(kube, namespace, name, "DisruptionTarget", timeout=timeout)
    assert (cond.reason, cond.message) == (EVICTION_REASON, EVICTION_MESSAGE)
    assert pods.read(kube, namespace, name).metadata.deletion_timestamp is not None
    assert "Marking for deletion" in wait_dra.for_event(kube, namespace, name, "DeviceTaintManagerEviction")
    return cond


def not_evicted(kube, namespace, name):
    pod = pods.read(kube, namespace, name)
    if pod.metadata.deletion_timestamp is not None:
        return f"pod deleted: {pods.summary(pod)} conditions={[(c.type, c.reason) for c in pod.status.conditions]}"
    return None


def toleration(effect, seconds=None):
    entry = {"key": KEY, "operator": "Exists", "effect": effect}
    if seconds is not None:
        entry["tolerationSeconds"] = seconds
    return entry


def test_noschedule_taint_keeps_new_pods_unschedulable_until_tolerated(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=(DeviceSpec("dev-0", taints=[dra.device_taint(KEY, "NoSchedule")]),))
    cls = driver.config.driver_name
    blocked = dra_objects.pod("plain", template=dra_objects.template(cls))
    wait_dra.for_pod_unschedulable(kube, namespace, blocked.metadata.name)

    tolerating = dra_objects.pod(
        "tolerates", template=dra_objects.template(cls, tolerations=[toleration("NoSchedule")])
    )
    wait.for_pod_running_ready(kube, namespace, tolerating.metadata.name, timeout=POD_TIMEOUT)
    assert pods.read(kube, namespace, blocked.metadata.name).spec.node_name is None


def test_noschedule_taint_does_not_evict_a_running_pod(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_pod(kube, namespace, dra_objects, driver)
    driver.set_taints(device, [dra.device_taint(KEY, "NoSchedule")])
    stays(lambda: not_evicted(kube, namespace, pod.metadata.name), what="the pod not to be evicted", duration=5)


def test_noexecute_taint_in_resourceslice_evicts_the_pod(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    pod, device = running_pod(kube, namespace, dra_objects, driver)
    driver.set_taints(device, [dra.device_taint(KEY, "NoExecute")])
    assert_evicted(kube, namespace, pod.metadata.name)


def test_noexecute_device_taint_rule_evicts_the_pod(kube, namespace, dra_driver, dra_objects, cluster):
    driver = dra_driver(devices=("dev-0", "dev-1"))
    pod, device = running_pod(kube, namespace, dra_objects, driver)
    bystander, _ = running_pod(kube, namespace, dra_objects, driver)
    rule = dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name, device=device)
    assert_evicted(kube, namespace, pod.metadata.name)
    assert not_evicted(kube, namespace, bystander.metadata.name) is None, "the other device is not tainted"
    if has_none_taint_effect(cluster.k8s_version):  # rule status exists from 1.35

        def completed(obj):
            conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
            return conds.get("EvictionInProgress", {}).get("reason") == "Completed"

        wait_dra.for_rule(
            kube,
            dra_objects,
            rule,
            completed,
            "to report EvictionInProgress reason Completed",
            timeout=RULE_STATUS_TIMEOUT,
        )


def test_toleration_seconds_delay_the_eviction(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_pod(
        kube, namespace, dra_objects, driver, tolerations=[toleration("NoExecute", TOLERATION_SECONDS)]
    )
    name = dra_objects.taint_rule(dra.device_taint(KEY, "NoExecute"), driver=driver.config.driver_name, device=device)
    rule = dra_objects.get_rule(name)
    time_added = _parse(rule["spec"]["taint"]["timeAdded"])
    stays(
        lambda: not_evicted(kube, namespace, pod.metadata.name),
        what="the pod to stay while the toleration lasts",
        duration=TOLERATION_SECONDS - 3,
    )
    cond = assert_evicted(kube, namespace, pod.metadata.name, timeout=TOLERATION_SECONDS + EVICTION_TIMEOUT)
    delay = (cond.last_transition_time - time_added).total_seconds()
    # Both timestamps have one-second resolution.
    assert delay >= TOLERATION_SECONDS - 1, f"evicted {delay:.0f}s after the taint, toleration is {TOLERATION_SECONDS}s"


def test_removing_the_taint_first_cancels_the_eviction(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod, device = running_pod(
        kube, namespace, dra_objects, driver, tolerations=[toleration("NoExecute", TOLERATION_SECONDS)]
    )
    driver.set_taints(device, [dra.device_taint(KEY, "NoExecute")])
    driver.set_taints(device, [])
    event = wait_dra.for_event(kube, namespace, pod.metadata.name, "Cancelling deletion", timeout=EVICTION_TIMEOUT)
    assert "DeviceTaintManagerEviction" in event
    stays(
        lambda: not_evicted(kube, namespace, pod.metadata.name),
        what="the pod to stay after the taint is gone",
        duration=TOLERATION_SECONDS + 3,
    )


def test_effect_none_only_reports_in_the_rule_status(kube, namespace, dra_driver, dra_objects, cluster):
    if not has_none_taint_effect(cluster.k8s_version):
        pytest.skip("effect None and DeviceTaintRule status come with 1.35 (kubernetes#134152)")
    driver = dra_driver(devices=("dev-0", "dev-1"))
    pod, _ = running_pod(kube, namespace, dra_objects, driver)
    rule = dra_objects.taint_rule(dra.device_taint(KEY, "None"), driver=driver.config.driver_name)

    def reported(obj):
        conds = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        return conds.get("EvictionInProgress", {}).get("reason") == "NoEffect"

    obj = wait_dra.for_rule(kube, dra_objects, rule, reported, "to report NoEffect", timeout=RULE_STATUS_TIMEOUT)
    cond = next(c for c in obj["status"]["conditions"] if c["type"] == "EvictionInProgress")
    assert cond["status"] == "False"
    assert cond["message"].startswith(
        "2 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace "
    ), cond["message"]
    stays(lambda: not_evicted(kube, namespace, pod.metadata.name), what="no eviction for effect None", duration=3)


def _parse(timestamp):
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
