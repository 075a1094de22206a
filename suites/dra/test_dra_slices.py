"""The kubelet's hand on ResourceSlices: it wipes the node's slices when it starts and those of a driver that
is gone or unusable for the wiping delay (pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go, module source
v1.37.1: NewDRAPluginManager wipes every driver's slices of the node at startup, sync() queues a wipe
`wipingDelay` after a driver stops being usable, defaultWipingDelay 30 s in pkg/kubelet/cm/dra/manager.go).
Also the control plane's limits on claims the kubelet then serves: generated names, quota.

The two wiping-delay scenarios each have a module fixture, and the `overlapping` marker starts both before the
module's first test, so their 30 s waits overlap. The kubelet-restart test stays after their tests: a restart
wipes every slice of the node at once, theirs too, before the delay they measure.
"""

import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from device_conformance.fixtures.dra_drivers import unique_driver
from kubernetes import client

from device_conformance.framework import (
    SINCE_DRA,
    SINCE_SLICE_WIPE_ON_DISCONNECT,
    SINCE_SLICE_WIPING_DELAY,
    ClaimPodHandle,
    DraDriverHandle,
    Pending,
    claim_record,
    dra,
    pods,
    publish_slice,
    timeouts,
    until,
    wait_dra,
)

pytestmark = [pytest.mark.dra, SINCE_DRA, pytest.mark.overlapping("unregistered_driver", "unresponsive_driver")]


def slice_names(kube, api, node_name, driver_name):
    return [s["metadata"]["name"] for s in dra.list_slices(kube, api, node=node_name, driver=driver_name)]


@dataclass
class UnusableDriver:
    """A driver the kubelet can no longer use, and since when (time.monotonic())."""

    driver: DraDriverHandle
    since: float


def _reachable_again(driver: DraDriverHandle) -> None:
    """The driver's slices come back for the teardown's drain: the kubelet must reach it again."""
    driver.start_dra_service()
    driver.start_registrar()


@pytest.fixture(scope="module")
def unregistered_driver(shared_dra) -> Iterator[UnusableDriver]:
    """A registered driver whose registration socket is then removed."""
    driver = shared_dra.driver(devices=("dev-0",))
    driver.stop_registrar()
    yield UnusableDriver(driver, time.monotonic())
    _reachable_again(driver)


@pytest.fixture(scope="module")
def unresponsive_driver(shared_dra) -> Iterator[UnusableDriver]:
    """A driver that registers but whose DRA service never answers."""
    driver = shared_dra.driver(devices=("dev-0",), serve_dra_on_start=False)
    driver.wait_for_registration(timeout=timeouts.DRA_REGISTRATION)
    yield UnusableDriver(driver, time.monotonic())
    _reachable_again(driver)


def assert_wiped_after_the_delay(kube, node, driver, since):
    api = driver.config.resource_api_version
    wait_dra.for_slice_count(kube, api, node.name, driver.config.driver_name, 0, timeout=timeouts.DRA_SLICE_WIPE)
    waited = time.monotonic() - since
    assert waited >= timeouts.DRA_WIPING_DELAY - 2, (
        f"slices of {driver.config.driver_name} wiped {waited:.0f}s after it became unusable, "
        f"before the kubelet's wiping delay of {timeouts.DRA_WIPING_DELAY}s"
    )


@SINCE_SLICE_WIPING_DELAY
@pytest.mark.scenario("DRA-S2")
def test_slices_are_wiped_after_the_driver_unregisters(kube, node, unregistered_driver):
    driver = unregistered_driver.driver
    assert not os.path.exists(driver.config.registration_socket), "its registration socket is gone"
    assert_wiped_after_the_delay(kube, node, driver, unregistered_driver.since)


@SINCE_SLICE_WIPE_ON_DISCONNECT
@pytest.mark.scenario("DRA-S4")
def test_slices_are_wiped_when_the_registered_driver_is_unresponsive(kube, node, unresponsive_driver):
    driver = unresponsive_driver.driver
    assert driver.calls("NodePrepareResources") == [], "its DRA service never served"
    assert_wiped_after_the_delay(kube, node, driver, unresponsive_driver.since)


# After the wiping-delay tests (module doc): its restart would wipe their drivers' slices before the delay.
@pytest.mark.scenario("DRA-S1")
def test_kubelet_start_wipes_the_nodes_slices_and_keeps_other_nodes(kube, node, resource_api, kubelet_restored):
    driver = unique_driver()
    other_node = f"dc-other-{driver[3:11]}"
    try:
        local, _ = publish_slice(kube, resource_api, node.name, driver)
        foreign, foreign_uid = publish_slice(kube, resource_api, other_node, driver)
        node.kubelet.restart()
        wait_dra.for_slice_count(kube, resource_api, node.name, driver, 0, timeout=timeouts.DRA_SLICE_WIPE)
        kept = dra.list_slices(kube, resource_api, node=other_node, driver=driver)
        assert [(s["metadata"]["name"], s["metadata"]["uid"]) for s in kept] == [(foreign, foreign_uid)], (
            f"the slice of node {other_node} after the kubelet of {node.name} started (its own {local} went)"
        )
    finally:
        dra.delete_slices(kube, resource_api, driver=driver)


# Upstream test/e2e/dra/dra.go "truncates the name of a generated resource claim"; the resourceclaim
# controller cuts pod and claim names in proportion to 57 characters (pkg/controller/resourceclaim/
# controller.go, module source v1.37.1), then the API server adds 5 random characters.
@pytest.mark.scenario("DRA-E28")
def test_generated_claim_name_is_truncated_and_the_pod_runs(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    template = dra_objects.template(driver.config.driver_name)
    pod_name, claim_ref = "p" * 63, "c" * 63
    manifest = dra.with_claims(pods.pod_manifest(pod_name, ["sleep", "86400"]), templates={claim_ref: template})
    created = pods.create(kube, namespace, manifest)
    pod = ClaimPodHandle.of(kube, created, dra_objects.nodes, resource_api=dra_objects.api, claim_ref=claim_ref)
    pod.wait_running()
    name = pod.claim_name()
    cut = 63 * 57 // len(f"{pod_name}-{claim_ref}-")
    assert re.fullmatch(f"p{{{cut}}}-c{{{cut}}}[a-z0-9]{{5}}", name), f"generated claim name {name!r}"
    claim = pod.claim()
    assert claim_record(driver.calls("NodePrepareResources")) == [([claim["metadata"]["uid"]], "ok")]
    prepared = driver.prepared()[claim["metadata"]["uid"]]
    assert (prepared["namespace"], prepared["name"]) == (namespace, name), "the driver was asked for that claim"


QUOTA_KEY = "count/resourceclaims.resource.k8s.io"


@pytest.mark.scenario("DRA-E27")
def test_resourceclaim_count_quota_refuses_the_claim_over_it(kube, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    dra_objects.claim(driver.config.driver_name)
    quota = {"metadata": {"name": "claims"}, "spec": {"hard": {QUOTA_KEY: "1"}}}
    kube.core.create_namespaced_resource_quota(namespace, quota)

    def counted():
        status = kube.core.read_namespaced_resource_quota("claims", namespace).status
        used = (status.used or {}).get(QUOTA_KEY) if status else None
        return True if used == "1" else Pending(f"status {status}")

    until(counted, what=f"ResourceQuota claims of {namespace} to count the existing claim", timeout=timeouts.CLAIM)
    with pytest.raises(client.ApiException) as refused:
        dra_objects.claim(driver.config.driver_name)
    expected = f"exceeded quota: claims, requested: {QUOTA_KEY}=1, used: {QUOTA_KEY}=1, limited: {QUOTA_KEY}=1"
    assert refused.value.status == 403 and expected in refused.value.body, f"refusal: {refused.value.body}"
