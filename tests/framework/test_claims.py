"""framework/claims.py: a named ResourceClaim, a ResourceSlice published on a driver's behalf and a prepare held
across the kubelet's end, against stand-ins for the API and a fake driver (no cluster)."""

from __future__ import annotations

from types import SimpleNamespace

from device_conformance.core import timeouts
from device_conformance.framework import claims


class Custom:
    """The custom-objects API: records each create and answers the object with metadata."""

    def __init__(self):
        self.created = []

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        self.created.append((group, version, namespace, plural, body))
        return {**body, "metadata": {**body["metadata"], "uid": "uid-1"}}

    def create_cluster_custom_object(self, group, version, plural, body):
        self.created.append((group, version, plural, body))
        return {**body, "metadata": {**body["metadata"], "uid": "uid-2"}}


def test_a_named_claim_asks_for_one_device_of_the_driver_and_answers_its_uid():
    custom = Custom()
    objects = SimpleNamespace(kube=SimpleNamespace(custom=custom), namespace="ns", api="resource.k8s.io/v1")
    driver = SimpleNamespace(config=SimpleNamespace(driver_name="dra.example.com"))
    assert claims.make_claim(objects, driver, "same-abc") == "uid-1"
    [(group, version, namespace, plural, body)] = custom.created
    assert (group, version, namespace, plural) == ("resource.k8s.io", "v1", "ns", "resourceclaims")
    assert body["metadata"]["name"] == "same-abc"
    [request] = body["spec"]["devices"]["requests"]
    assert request["exactly"]["deviceClassName"] == "dra.example.com"


def test_a_published_slice_has_one_device_in_the_nodes_pool_and_answers_name_and_uid():
    custom = Custom()
    name, uid = claims.publish_slice(SimpleNamespace(custom=custom), "resource.k8s.io/v1beta1", "node-1", "dra.x.com")
    [(group, version, plural, body)] = custom.created
    assert (group, version, plural, uid) == ("resource.k8s.io", "v1beta1", "resourceslices", "uid-2")
    assert name == body["metadata"]["name"]
    spec = body["spec"]
    assert (spec["driver"], spec["nodeName"], spec["pool"]["name"]) == ("dra.x.com", "node-1", "node-1")
    assert [d["name"] for d in spec["devices"]] == ["dev-0"]


class Driver:
    """A fake driver's handle: the calls the test makes on it, in order."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, method):
        return lambda *args, **kwargs: self.calls.append((method, args, kwargs))


class Pod:
    def __init__(self, calls):
        self.calls = calls

    def wait_running(self, timeout):
        self.calls.append(("wait_running", (), {"timeout": timeout}))

    def claim_uid(self):
        return "claim-1"


def test_a_prepare_held_across_the_kubelets_end_is_asked_again_held_and_released():
    driver = Driver()
    pod = Pod(driver.calls)
    uid = claims.prepare_held_across(driver, pod, lambda: driver.calls.append(("kubelet ends", (), {})))
    assert uid == "claim-1"
    assert driver.calls == [
        ("wait_for_blocked", (claims.PREPARE,), {"timeout": timeouts.CLAIM_POD_START}),
        ("kubelet ends", (), {}),
        ("wait_for_registration", (), {"count": 2, "timeout": timeouts.DRA_REGISTRATION}),
        ("wait_for_call", (claims.PREPARE,), {"count": 2, "timeout": timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART}),
        ("wait_for_blocked", (claims.PREPARE,), {}),
        ("unblock", (), {}),
        ("wait_running", (), {"timeout": timeouts.CLAIM_POD_START_AFTER_KUBELET_RESTART}),
    ]
