"""The fake DRA driver's API-server side against an in-memory CustomObjectsApi (no cluster needed)."""

import copy

import pytest
from kubernetes import client
from kubernetes.client import ApiException

from device_conformance.fakes.dra_driver.claims import ClaimError, ClaimPreparer
from device_conformance.fakes.dra_driver.config import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.kubeapi import KubeApi, ensure_device_class
from device_conformance.fakes.dra_driver.resourceslices import build_resource_slice
from device_conformance.fakes.dra_driver.state import DriverState


class FakeCustomObjects:
    """Just enough of CustomObjectsApi: cluster objects by (plural, name), resourceVersion checks."""

    def __init__(self):
        self.objects = {}
        self.writes = []

    def get_cluster_custom_object(self, group, version, plural, name, **_):
        if (plural, name) not in self.objects:
            raise ApiException(status=404, reason="Not Found")
        return copy.deepcopy(self.objects[plural, name])

    def create_cluster_custom_object(self, group, version, plural, body, **_):
        key = (plural, body["metadata"]["name"])
        if key in self.objects:
            raise ApiException(status=409, reason="AlreadyExists")
        return self._store(key, body, "create")

    def replace_cluster_custom_object(self, group, version, plural, name, body, **_):
        if body["metadata"].get("resourceVersion") != self.objects[plural, name]["metadata"]["resourceVersion"]:
            raise ApiException(status=409, reason="Conflict")
        return self._store((plural, name), body, "replace")

    def get_namespaced_custom_object(self, group, version, namespace, plural, name, **_):
        return self.get_cluster_custom_object(group, version, plural, f"{namespace}/{name}")

    def _store(self, key, body, verb):
        body = copy.deepcopy(body)
        body["metadata"]["resourceVersion"] = str(len(self.writes) + 1)
        self.objects[key] = body
        self.writes.append((verb, key))
        return copy.deepcopy(body)


@pytest.fixture
def api():
    kube = KubeApi("unused", "resource.k8s.io/v1", api_client=object())
    kube._custom = FakeCustomObjects()
    return kube


def _slice(taints=()):
    return build_resource_slice(
        driver="dra.example.com",
        node_name="node-1",
        pool="node-1",
        generation=1,
        devices=[DeviceSpec("dev-0", taints=list(taints))],
        api_version="resource.k8s.io/v1",
    )


def test_publish_creates_then_keeps_identical_then_replaces_with_next_generation(api):
    api.publish_slice(_slice())
    unchanged = api.publish_slice(_slice())
    changed = api.publish_slice(_slice(taints=[{"key": "k", "effect": "NoSchedule"}]))

    assert [verb for verb, _ in api._custom.writes] == ["create", "replace"]
    assert unchanged["spec"]["pool"]["generation"] == 1
    assert changed["spec"]["pool"]["generation"] == 2
    assert changed["spec"]["devices"][0]["taints"] == [{"key": "k", "effect": "NoSchedule"}]


def test_prepare_reads_the_claim_checks_its_uid_and_keeps_this_drivers_results(api, tmp_path):
    api._custom.objects["resourceclaims", "ns/claim"] = {
        "metadata": {"uid": "uid-1", "resourceVersion": "1"},
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "gpu/large", "driver": "dra.example.com", "pool": "node-1", "device": "dev-0"},
                        {"request": "nic", "driver": "net.example.com", "pool": "node-1", "device": "eth1"},
                    ]
                }
            }
        },
    }
    config = DriverConfig(
        driver_name="dra.example.com", node_name="node-1", registry_dir="/r", plugin_dir="/p", cdi_dir=str(tmp_path)
    )
    preparer = ClaimPreparer(config, DriverState(None), api)

    with pytest.raises(ClaimError, match="has UID uid-1, the kubelet asked for uid-old"):
        preparer.prepare("ns", "uid-old", "claim")
    devices = preparer.prepare("ns", "uid-1", "claim")

    assert devices == [
        {
            "request_names": ["gpu"],  # the sub-request's parent, which containers reference
            "pool_name": "node-1",
            "device_name": "dev-0",
            "cdi_device_ids": ["dra.example.com/device=uid-1-dev-0"],
        }
    ]
    with pytest.raises(ClaimError, match="HTTP 404"):
        preparer.prepare("ns", "uid-2", "missing")


def test_ensure_device_class_creates_and_repairs_the_selector(monkeypatch):
    fake = FakeCustomObjects()
    monkeypatch.setattr(client, "CustomObjectsApi", lambda _api_client: fake)

    created = ensure_device_class("dra.example.com", api_client=object())
    fake.objects["deviceclasses", "dra.example.com"]["spec"]["selectors"] = []
    repaired = ensure_device_class("dra.example.com", api_client=object())
    ensure_device_class("dra.example.com", api_client=object())

    expected = [{"cel": {"expression": 'device.driver == "dra.example.com"'}}]
    assert created["spec"]["selectors"] == repaired["spec"]["selectors"] == expected
    assert [verb for verb, _ in fake.writes] == ["create", "replace"]


def _driver_on(api, tmp_path, **config):
    """A fake DRA driver for node-1 whose slices go to the in-memory API (as if a kubeconfig had been given)."""
    from device_conformance.fakes.dra_driver.driver import Driver

    class FakeCore:
        def read_node(self, name, **_):
            return client.V1Node(metadata=client.V1ObjectMeta(name=name, uid="node-uid"))

    api._core = FakeCore()
    driver = Driver(
        DriverConfig(
            driver_name="dra.example.com",
            node_name="node-1",
            registry_dir=str(tmp_path),
            plugin_dir=str(tmp_path),
            control_socket=str(tmp_path / "c.sock"),
            call_log=str(tmp_path / "calls.jsonl"),
            **config,
        )
    )
    driver.slices.kube = api
    return driver


def test_driver_republishes_owned_slice_when_taints_change(api, tmp_path):
    driver = _driver_on(api, tmp_path, devices=[DeviceSpec("dev-0")])

    first = driver.publish_slices()
    second = driver.set_taints("dev-0", [{"key": "example.com/bad", "effect": "NoExecute"}])

    assert (first["published"], first["generation"], second["generation"], second["attempts"]) == (True, 1, 2, 2)
    stored = api._custom.objects["resourceslices", second["name"]]
    assert stored["metadata"]["ownerReferences"][0]["uid"] == "node-uid"
    assert stored["spec"]["devices"][0]["taints"] == [{"key": "example.com/bad", "effect": "NoExecute"}]
    driver.shutdown()


def test_driver_keeps_both_slices_of_a_partitioned_pool_at_one_generation(api, tmp_path):
    """Only the device slice changes: it is bumped, and the counter slice follows to the same generation
    (consumers ignore slices of a lower generation than the pool's highest)."""

    partition = DeviceSpec("gpu-0-half-a", consumes_counters={"gpu-0": {"memory": "2Gi"}})
    driver = _driver_on(api, tmp_path, devices=[partition], shared_counters={"gpu-0": {"memory": "4Gi"}})

    first = driver.publish_slices()
    again = driver.publish_slices()
    second = driver.set_taints("gpu-0-half-a", [{"key": "example.com/bad", "effect": "NoSchedule"}])

    names = ["node-1-dra.example.com", "node-1-dra.example.com-counters"]
    assert (first["names"], first["generation"], again["generation"], second["generation"]) == (names, 1, 1, 2)
    stored = [api._custom.objects["resourceslices", name] for name in names]
    assert [s["spec"]["pool"]["generation"] for s in stored] == [2, 2]
    assert [(verb, name) for verb, (_, name) in api._custom.writes] == [
        ("create", names[0]),
        ("create", names[1]),
        ("replace", names[0]),  # the taint: bumped to 2
        ("replace", names[1]),  # unchanged content, brought to generation 2
    ]
    driver.shutdown()
