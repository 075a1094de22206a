"""A claim's life on the node: allocated by the real scheduler, prepared once, unprepared once, cleaned up."""

import pytest

from device_conformance.fakes.dra_driver import cdi
from device_conformance.kube import pods
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait

pytestmark = pytest.mark.dra

POD_TIMEOUT = 60
UNPREPARE_TIMEOUT = 60


def prepared_claims(calls):
    return [uid for c in calls for uid in (c["request"].get("claims") and [x["uid"] for x in c["request"]["claims"]])]


def test_template_claim_is_prepared_and_unprepared_once(kube, namespace, dra_driver, dra_objects, resource_api):
    driver = dra_driver(devices=("dev-0",))
    template = dra_objects.template(driver.config.driver_name)
    pod = dra_objects.pod("tmpl", template=template)
    name = pod.metadata.name
    wait.for_pod_running_ready(kube, namespace, name, timeout=POD_TIMEOUT)

    claim_name = wait_dra.for_generated_claim(kube, namespace, name, "dev")
    claim = dra_objects.get_claim(claim_name)
    uid = claim["metadata"]["uid"]
    results = claim["status"]["allocation"]["devices"]["results"]
    assert [(r["driver"], r["pool"], r["device"]) for r in results] == [
        (driver.config.driver_name, node_pool(driver), "dev-0")
    ]
    assert wait_dra.reserved_uids(claim) == [pod.metadata.uid]
    prepares = driver.calls("/NodePrepareResources")
    assert [c["ok"] for c in prepares] == [True]
    assert prepared_claims(prepares) == [uid]
    assert list(driver.prepared()) == [uid]

    kube.core.delete_namespaced_pod(name, namespace)
    wait.for_pod_gone(kube, namespace, name, timeout=UNPREPARE_TIMEOUT)
    wait_dra.for_claim_gone(kube, resource_api, namespace, claim_name)
    unprepares = driver.calls("/NodeUnprepareResources")
    assert prepared_claims(unprepares) == [uid], "unprepared exactly once"
    assert all(c["ok"] for c in unprepares)
    assert driver.prepared() == {}


def node_pool(driver):
    return driver.config.pool


def test_container_sees_its_device_env(kube, node, namespace, dra_driver, dra_objects):
    cdi_ok, why = node.runtime_cdi() if hasattr(node, "runtime_cdi") else (False, "provider cannot ask the runtime")
    if not cdi_ok:
        pytest.skip(f"the container runtime has no CDI, so DRA devices cannot reach containers: {why}")
    driver = dra_driver(devices=("dev-0",))
    template = dra_objects.template(driver.config.driver_name)
    pod = dra_objects.pod("env", ["sh", "-c", "env | grep ^DRA_ | sort"], template=template)
    name = pod.metadata.name
    wait.for_pod_phase(kube, namespace, name, "Succeeded", timeout=POD_TIMEOUT)
    claim_name = wait_dra.for_generated_claim(kube, namespace, name, "dev")
    uid = dra_objects.get_claim(claim_name)["metadata"]["uid"]
    expected = sorted(cdi.device_env(namespace, claim_name, uid, "dev-0"))
    assert pods.logs(kube, namespace, name).split() == expected
