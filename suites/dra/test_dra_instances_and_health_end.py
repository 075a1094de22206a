"""Two connected instances of one driver, and a driver's health going Unknown when its stream ends.

Instances (KEP-4815 seamless updates, the rolling-update window): while a second instance of a driver is
registered on a socket of its own (`DriverConfig.instance`), the kubelet calls the newer one. The DRA plugin
store keeps a driver's registrations in registration order and `get` walks them from the end, taking the
first connected one ("Heuristic: pick the most recent one", pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go,
module source v1.37.1: `add` appends to `pm.store[driverName]`, `get` loops `for i := len(plugins) - 1;
i >= 0; i--` over `plugin.connected`). The older one's deregistration (it stops and removes its registration
socket) takes only its own entry out (`remove`: `slices.IndexFunc` on driver name and endpoint, the driver
deleted from the store only when it was the `last`), so a claim prepared after that still reaches the newer
instance. test_dra_driver_update.py (DRA-E15/E16) prepares only after one instance went; here the claim is
prepared while both are connected, then once more after the older one's deregistration, which the kubelet's
plugin list shows first: `plugin_manager_total_plugins{state="actual_state_of_world"}` (pkg/kubelet/
pluginmanager/metrics/metrics.go) lists the registration sockets the plugin manager holds registered, and the
plugin manager takes a socket out of it in the same unregister operation that calls `DeRegisterPlugin`
(pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go, GenerateUnregisterPluginFunc).

Health across instances: the kubelet opens a health stream to each registered instance, and a device's health
is kept per driver, not per instance (pkg/kubelet/cm/dra/healthinfo.go, keyed by driver name); when the older
instance's stream ends, the handler clears the whole driver's health (manager.go HandleWatchResourcesStream,
`defer ... clearDriver`), also what the newer instance reported: kubernetes#140818, open, fix PR #140842 ("stale
plugin endpoints cannot overwrite or clear active health state"), a known bug on every release from 1.36.

Health (KEP-4680, ResourceHealthStatus): a device's health expires after its `health_check_timeout_seconds`
(k8s.io/kubelet/pkg/apis/dra-health/v1alpha1/api.proto DeviceHealth; the kubelet's default is 30 s,
pkg/kubelet/cm/dra/healthinfo.go DefaultHealthTimeout). A driver that reported its device Healthy with a
10-minute timeout and then stops must still have that device turn Unknown within the kubelet's own window:
when the health stream ends, pkg/kubelet/cm/dra/manager.go HandleWatchResourcesStream clears the driver's
health cache in its deferred `m.healthInfoCache.clearDriver` (healthinfo.go: `delete(*cache.HealthInfo,
driverName)`), and a device missing from the cache reads Unknown (`getHealthInfo`), which the pod's
allocatedResourcesStatus shows at its next status update (the kubelet's pod resync, 60-90 s; the wait is
timeouts.DRA_HEALTH_UNKNOWN, 2 minutes, far below the 10-minute timeout).

Proved against one-line breaks of a 1.37.1 tree (K8S_SOURCE; `pytest <this module> -n 1 -m ''
--k8s-source DIR --k8s-version 1.37.1`), each reverted afterwards (the same run passes):

- dra_plugin_manager.go `get`: `for i := len(plugins) - 1; i >= 0; i-- {` -> `for i := 0; i < len(plugins);
  i++ {` (the oldest connected instance wins):
  `AssertionError: prepared once, by the newer instance, while both are registered` /
  `{'new': []} != {'new': [(['c0e0f318-…'], 'ok')]}` / `{'old': [(['c0e0f318-…'], 'ok')]} != {'old': []}`
- dra_plugin_manager.go `remove`: `last := len(plugins) == 1` -> `last := true` (one instance's deregistration
  drops the whole driver): the claim pod after the older instance went never starts, the kubelet answers "not
  registered": `WaitTimeout: timed out after 120s waiting for pod dc-13e987aa/old-gone-a1347c to be Running and
  Ready` / `last seen: phase=Pending main: waiting ContainerCreating`
- healthinfo.go `clearDriver`: `delete(*cache.HealthInfo, driverName)` -> `_ = driverName` (stream end keeps
  the cached health): `WaitTimeout: timed out after 120s waiting for ('claim:dev', 'dc-9b7d2c6d.example.com/
  device=eeecfc19-…-dev-0') to be reported Unknown in the pod status of pod dc-629270ab/health-end-8f044e` /
  `last seen: allocatedResourcesStatus: {(…-dev-0'): 'Healthy'}` (it also shows that the kubelet honours the
  600 s timeout: with its 30 s default the device would have gone Unknown at the next status update anyway; seen
  before the wait moved to fixtures/dra_health.py, whose message lists the keys and pods)
"""

import os
import time

import pytest
from device_conformance.fixtures.dra_health import (
    device_health,
    health_key,
    health_keys,
    wait_health,
    wait_stream,
)

from device_conformance.framework import (
    FIRST_DRA_CONNECTION_MONITORING_MINOR,
    HEALTH_CLEARED_BY_OLDER_INSTANCE,
    PREPARE,
    SINCE_DRA,
    SINCE_RESOURCE_HEALTH_STATUS,
    SINCE_SEAMLESS_DRIVER_UPDATE,
    UNPREPARE,
    Pending,
    claim_record,
    metrics,
    timeouts,
    until,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA]

PLUGINS_METRIC = "plugin_manager_total_plugins"
# Ten minutes: far beyond the wait for Unknown (timeouts.DRA_HEALTH_UNKNOWN).
LONG_HEALTH_TIMEOUT = 600


def registered_sockets(kube, node):
    """Base names of the registration sockets the kubelet's plugin manager holds registered (its actual state of
    the world, `plugin_manager_total_plugins`), with their counts."""
    return {
        os.path.basename(s.labels["socket_path"]): s.value
        for s in metrics.read(kube, node.name)
        if s.name == PLUGINS_METRIC and s.labels.get("state") == "actual_state_of_world"
    }


def driver_sockets(kube, node, name):
    return {sock: n for sock, n in registered_sockets(kube, node).items() if sock.startswith(f"{name}-")}


def calls_by_instance(method, *drivers):
    """{instance: (claim UIDs, outcome) of each `method` call it got}: which instance the kubelet called."""
    return {d.config.instance: claim_record(d.calls(method)) for d in drivers}


@SINCE_SEAMLESS_DRIVER_UPDATE
@pytest.mark.since(f"1.{FIRST_DRA_CONNECTION_MONITORING_MINOR}", "the kubelet logs its connection to a driver")
@pytest.mark.scenario("DRA-X3", "DRA-E15")
def test_newer_instance_serves_while_both_are_registered_and_after_the_older_one_goes(
    kube, node, dra_driver, dra_objects
):
    """Instance "old", then instance "new" of one driver, both registered and connected: a claim pod is prepared
    and unprepared by "new" only. "old" stops (its sockets removed): the kubelet's plugin list keeps "new"'s
    registration socket and drops "old"'s, and a second claim pod is again prepared by "new" only."""
    old = dra_driver(devices=("dev-0",), instance="old")
    name = old.config.driver_name
    old_sock = os.path.basename(old.config.registration_socket)
    mark = node.kubelet.log_mark()
    new = dra_driver(devices=("dev-0",), driver_name=name, instance="new")
    new_sock = os.path.basename(new.config.registration_socket)
    # The store prefers a connected instance; "new" connects right after its registration (conn.Connect in add).
    wait_dra.for_kubelet_connection(node, mark, name)
    both = driver_sockets(kube, node, name)
    assert both == {old_sock: 1, new_sock: 1}, f"the kubelet's registered sockets of {name} with both up: {both}"

    first = dra_objects.claim_pod("both-up", new)
    first.wait_running()
    uid = first.claim_uid()
    assert calls_by_instance(PREPARE, old, new) == {"old": [], "new": [([uid], "ok")]}, (
        "prepared once, by the newer instance, while both are registered"
    )
    first.delete()
    first.wait_gone(timeout=timeouts.UNPREPARE)
    assert calls_by_instance(UNPREPARE, old, new) == {"old": [], "new": [([uid], "ok")]}, (
        "unprepared once, by the newer instance"
    )

    assert old.stop() == 0, f"{old.name} did not stop cleanly: {old.log_tail()}"

    def only_new_registered():
        now = driver_sockets(kube, node, name)
        return True if now == {new_sock: 1} else Pending(f"registered sockets of {name}: {now}")

    until(
        only_new_registered,
        what=f"the kubelet to deregister {old_sock} and keep {new_sock}",
        timeout=timeouts.DRA_REGISTRATION,
    )

    second = dra_objects.claim_pod("old-gone", new)
    second.wait_running()
    second_uid = second.claim_uid()
    assert calls_by_instance(PREPARE, old, new) == {"old": [], "new": [([uid], "ok"), ([second_uid], "ok")]}, (
        "the claim prepared after the older instance's deregistration reaches the newer one"
    )
    assert driver_sockets(kube, node, name) == {new_sock: 1}, "the newer instance stays registered"


@SINCE_SEAMLESS_DRIVER_UPDATE
@SINCE_RESOURCE_HEALTH_STATUS
@pytest.mark.since(f"1.{FIRST_DRA_CONNECTION_MONITORING_MINOR}", "the kubelet logs its connection to a driver")
@pytest.mark.known_bug(HEALTH_CLEARED_BY_OLDER_INSTANCE)
def test_the_older_instances_stream_end_keeps_the_health_the_newer_one_reported(
    node, dra_driver, dra_objects, shows_known_bug
):
    """kubernetes#140818: instances "old" and "new" of one driver, each with its health stream open; a pod's claim
    of two devices is prepared by "new", which reports both Healthy for 10 minutes. "old" stops and the kubelet
    logs the end of its stream. "new" then reports dev-1 Unhealthy in a report of dev-1 alone (a report may cover a
    subset: kubeletplugin/health.go), and the pod status that change brings still shows dev-0 Healthy: what the
    newer instance reported is not the older one's to clear."""
    old = dra_driver(devices=("dev-0", "dev-1"), instance="old", health_service=True)
    name = old.config.driver_name
    mark = node.kubelet.log_mark()
    new = dra_driver(devices=("dev-0", "dev-1"), driver_name=name, instance="new", health_service=True)
    wait_dra.for_kubelet_connection(node, mark, name)
    wait_stream(old)
    wait_stream(new)
    pod = dra_objects.claim_pod("health-instances", new, request={"count": 2})
    pod.wait_running()
    keys = health_keys(new, pod.claim_uid())
    assert sorted(keys) == ["dev-0", "dev-1"], f"the newer instance prepared {sorted(keys)}"
    both = {"dev-0": "Healthy", "dev-1": "Healthy"}
    assert new.push_health(both, timeout_seconds=LONG_HEALTH_TIMEOUT) == 1, "one stream of the newer instance"
    wait_health([(pod, keys["dev-0"]), (pod, keys["dev-1"])], "Healthy")

    ended = node.kubelet.log_mark()
    assert old.stop() == 0, f"{old.name} did not stop cleanly: {old.log_tail()}"
    wait_dra.for_health_stream_end(node, ended)
    new.push_health({"dev-1": "Unhealthy"}, partial=True)

    def after_the_report() -> dict | Pending:
        seen = device_health(pod.read())
        return seen if seen.get(keys["dev-1"]) == "Unhealthy" else Pending(f"allocatedResourcesStatus: {seen}")

    seen = until(after_the_report, what=f"{keys['dev-1']} Unhealthy in {pod}", timeout=timeouts.DRA_HEALTH_REPORTED)
    with shows_known_bug(HEALTH_CLEARED_BY_OLDER_INSTANCE):
        assert seen.get(keys["dev-0"]) == "Healthy", (
            f"{keys['dev-0']} reads {seen.get(keys['dev-0'])} in the pod status that reports dev-1 Unhealthy: the "
            "newer instance reported it Healthy for 10 minutes, and only the older instance's stream ended"
        )


@pytest.mark.slow  # Unknown shows at the kubelet's next pod status update (its resync, 60-90 s)
@SINCE_RESOURCE_HEALTH_STATUS
@pytest.mark.scenario("DRA-X5", "DRA-H2")
def test_stopped_driver_devices_turn_unknown_long_before_their_health_timeout(dra_driver, dra_objects):
    """The driver reports its device Healthy with health_check_timeout_seconds 600, then stops: the device turns
    Unknown in the pod status within timeouts.DRA_HEALTH_UNKNOWN of the stop, not once the 10 minutes ran out."""
    driver = dra_driver(devices=("dev-0",), health_service=True)
    pod = dra_objects.claim_pod("health-end", driver)
    pod.wait_running()
    wait_stream(driver)
    key = health_key(driver, pod.claim_uid())
    assert driver.push_health({"dev-0": "Healthy"}, timeout_seconds=LONG_HEALTH_TIMEOUT) >= 1, "no stream got it"
    wait_health([(pod, key)], "Healthy")

    stopped_at = time.monotonic()
    assert driver.stop() == 0, f"{driver.name} did not stop cleanly: {driver.log_tail()}"
    wait_health([(pod, key)], "Unknown", timeout=timeouts.DRA_HEALTH_UNKNOWN)
    waited = time.monotonic() - stopped_at
    assert waited < LONG_HEALTH_TIMEOUT / 2, f"Unknown only {waited:.0f}s after the stop"
