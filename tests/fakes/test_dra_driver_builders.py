"""Pure parts of the fake DRA driver: ResourceSlice/DeviceClass bodies, config, CDI specs, claim results."""

import copy
import json

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.fakes.dra_driver.cdi import build_spec
from device_conformance.fakes.dra_driver.claims import results_from_claim
from device_conformance.fakes.dra_driver.config import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.resourceslices import (
    build_device_class,
    build_pool_slices,
    build_resource_slice,
    device_attribute,
    same_content,
)

TAINT = {"key": "example.com/broken", "value": "yes", "effect": "NoSchedule"}
GPU = DeviceSpec(
    name="gpu-0",
    attributes={"model": "LATEST-GPU-MODEL", "index": 0, "shared": False, "driverVersion": {"version": "1.2.3"}},
    capacity={"memory": "16Gi"},
    taints=[TAINT],
)


def _slice(api_version, devices=(GPU,), generation=1):
    return build_resource_slice(
        driver="dra.example.com",
        node_name="node-1",
        pool="node-1",
        generation=generation,
        devices=list(devices),
        api_version=api_version,
        node_uid="uid-node-1",
    )


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta2"])
def test_resource_slice_puts_device_fields_on_the_device(api_version):
    body = _slice(api_version)
    assert body["apiVersion"] == api_version
    assert body["kind"] == "ResourceSlice"
    assert body["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "node-1", "uid": "uid-node-1", "controller": True}
    ]
    assert body["spec"]["driver"] == "dra.example.com"
    assert body["spec"]["nodeName"] == "node-1"
    assert body["spec"]["pool"] == {"name": "node-1", "generation": 1, "resourceSliceCount": 1}
    assert body["spec"]["devices"] == [
        {
            "name": "gpu-0",
            "attributes": {
                "model": {"string": "LATEST-GPU-MODEL"},
                "index": {"int": 0},
                "shared": {"bool": False},
                "driverVersion": {"version": "1.2.3"},
            },
            "capacity": {"memory": {"value": "16Gi"}},
            "taints": [TAINT],
        }
    ]


def test_resource_slice_v1beta1_nests_device_fields_under_basic():
    device = _slice("resource.k8s.io/v1beta1")["spec"]["devices"][0]
    assert set(device) == {"name", "basic"}
    assert device["basic"]["capacity"] == {"memory": {"value": "16Gi"}}
    assert device["basic"]["taints"] == [TAINT]
    assert device["basic"]["attributes"]["index"] == {"int": 0}


def test_resource_slice_leaves_out_empty_fields_and_owner_without_node_uid():
    body = build_resource_slice(
        driver="d.example.com",
        node_name="Node_1",
        pool="p",
        generation=3,
        devices=[DeviceSpec("dev-0")],
        api_version="resource.k8s.io/v1",
    )
    assert body["spec"]["devices"] == [{"name": "dev-0"}]
    assert "ownerReferences" not in body["metadata"]
    assert body["metadata"]["name"] == "node-1-d.example.com"  # valid DNS subdomain


def test_device_attribute_types_and_rejects():
    assert device_attribute(True) == {"bool": True}  # not {"int": 1}
    assert device_attribute(7) == {"int": 7}
    assert device_attribute({"strings": ["a", "b"]}) == {"strings": ["a", "b"]}
    with pytest.raises(BadInput):
        device_attribute(1.5)
    with pytest.raises(BadInput):
        build_resource_slice(driver="d", node_name="n", pool="p", generation=1, devices=[], api_version="v1")


@pytest.mark.parametrize("api_version", ["resource.k8s.io/v1", "resource.k8s.io/v1beta1"])
def test_device_class_selects_the_driver_with_cel(api_version):
    body = build_device_class("dra.example.com", api_version=api_version)
    assert body == {
        "apiVersion": api_version,
        "kind": "DeviceClass",
        "metadata": {"name": "dra.example.com"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "dra.example.com"'}}]},
    }


def test_same_content_ignores_generation_and_server_fields_but_not_taint_changes():
    published = _slice("resource.k8s.io/v1", generation=4)
    published["spec"]["devices"][0]["taints"][0] = dict(TAINT, timeAdded="2026-01-01T00:00:00Z")
    assert same_content(published, _slice("resource.k8s.io/v1", generation=1))
    untainted = DeviceSpec(GPU.name, GPU.attributes, GPU.capacity, taints=[])
    assert not same_content(published, _slice("resource.k8s.io/v1", devices=[untainted]))
    beta = _slice("resource.k8s.io/v1beta1")
    assert same_content(beta, _slice("resource.k8s.io/v1beta1", generation=9))


def _config(**fields):
    """A driver config with made-up paths (nothing is started)."""
    paths = {"registry_dir": "/r", "plugin_dir": "/p", "control_socket": "/c.sock", "call_log": "/calls"}
    return DriverConfig(driver_name="dra.example.com", node_name="node-1", **paths, **fields)


def test_config_round_trips_through_json_with_derived_defaults():
    cfg = _config(health_service=True, devices=[GPU])
    again = DriverConfig.from_dict(json.loads(cfg.to_json()))
    assert again == cfg
    assert again.devices[0] == GPU
    assert again.endpoint == "/p/dra.sock"
    assert again.registration_socket == "/r/dra.example.com-reg.sock"
    assert again.pool == "node-1"
    assert again.cdi == "dra.example.com/device"
    assert again.advertised_versions == [
        "v1.DRAPlugin",
        "v1beta1.DRAPlugin",
        "v1.DRAResourceHealth",
        "v1alpha1.DRAResourceHealth",
    ]
    with pytest.raises(BadInput, match="unknown keys"):
        DriverConfig.from_dict({**cfg.to_dict(), "typo": 1})


def test_config_rejects_socket_paths_beyond_sun_path():
    cfg = DriverConfig(
        driver_name="dra.example.com",
        node_name="n",
        registry_dir="/tmp/" + "x" * 100,
        plugin_dir="/p",
        control_socket="/c.sock",
        call_log="/calls",
    )
    with pytest.raises(BadInput, match="longer than 107 bytes"):
        cfg.validate()


def test_cdi_spec_adds_one_env_edit_set_per_device():
    spec = build_spec("dra.example.com/device", "ns", "my-claim", "uid-1", ["gpu-0", "gpu.1"])
    assert spec["kind"] == "dra.example.com/device"
    assert [d["name"] for d in spec["devices"]] == ["uid-1-gpu-0", "uid-1-gpu.1"]
    assert spec["devices"][1]["containerEdits"]["env"] == [
        "DRA_DEVICE_GPU_1=ns/my-claim",
        "DRA_CLAIM_UID_GPU_1=uid-1",
    ]


def test_results_from_claim_keeps_only_this_driver():
    claim = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "a", "driver": "dra.example.com", "pool": "p", "device": "d0"},
                        {"request": "b", "driver": "other.example.com", "pool": "p", "device": "d1"},
                    ]
                }
            }
        }
    }
    assert [r["device"] for r in results_from_claim(claim, "dra.example.com")] == ["d0"]
    assert results_from_claim({"status": {}}, "dra.example.com") == []


def test_resource_slice_marks_a_shareable_device_and_only_it():
    shared = DeviceSpec.from_dict({"name": "gpu-0", "allow_multiple_allocations": True})
    body = build_resource_slice(
        driver="d.example.com",
        node_name="n",
        pool="n",
        generation=1,
        devices=[shared, DeviceSpec("gpu-1")],
        api_version="resource.k8s.io/v1",
    )
    devices = body["spec"]["devices"]
    assert [d.get("allowMultipleAllocations") for d in devices] == [True, None]


def test_rolling_update_instance_gets_sockets_of_its_own():
    cfg = DriverConfig(driver_name="dra.example.com", node_name="n", registry_dir="/r", plugin_dir="/p", instance="new")
    assert (cfg.registration_socket, cfg.service_socket, cfg.endpoint) == (
        "/r/dra.example.com-new-reg.sock",
        "/p/dra-new.sock",
        "/p/dra-new.sock",
    )


PARTITIONS = [
    DeviceSpec("gpu-0-half-a", consumes_counters={"gpu-0": {"memory": "2Gi"}}),
    DeviceSpec("gpu-0-full", consumes_counters={"gpu-0": {"memory": "4Gi"}}),
]


def _pool(api_version="resource.k8s.io/v1", counters=None, devices=PARTITIONS):
    return build_pool_slices(
        driver="dra.example.com",
        node_name="node-1",
        pool="node-1",
        generation=3,
        devices=list(devices),
        api_version=api_version,
        shared_counters={"gpu-0": {"memory": "4Gi"}} if counters is None else counters,
    )


def _consumes(memory):
    return [{"counterSet": "gpu-0", "counters": {"memory": {"value": memory}}}]


def test_pool_with_shared_counters_is_two_slices_one_with_devices_one_with_counters():
    devices, counters = _pool()
    assert [s["metadata"]["name"] for s in (devices, counters)] == [
        "node-1-dra.example.com",
        "node-1-dra.example.com-counters",
    ]
    assert (
        devices["spec"]["pool"]
        == counters["spec"]["pool"]
        == {
            "name": "node-1",
            "generation": 3,
            "resourceSliceCount": 2,
        }
    )
    assert devices["spec"]["devices"] == [
        {"name": "gpu-0-half-a", "consumesCounters": _consumes("2Gi")},
        {"name": "gpu-0-full", "consumesCounters": _consumes("4Gi")},
    ]
    assert "sharedCounters" not in devices["spec"]
    assert counters["spec"] == {
        "driver": "dra.example.com",
        "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 2},
        "nodeName": "node-1",
        "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "4Gi"}}}],
    }


def test_pool_without_shared_counters_is_the_one_device_slice():
    (only,) = _pool(counters={}, devices=[DeviceSpec("dev-0")])
    assert only["spec"]["pool"]["resourceSliceCount"] == 1
    assert only["spec"]["devices"] == [{"name": "dev-0"}]


def test_consumed_counters_sit_in_basic_for_v1beta1():
    devices, _ = _pool(api_version="resource.k8s.io/v1beta1")
    assert devices["spec"]["devices"][0] == {"name": "gpu-0-half-a", "basic": {"consumesCounters": _consumes("2Gi")}}


def test_same_content_sees_counter_changes_and_optionally_the_generation():
    devices, counters = _pool()
    other_devices, other_counters = _pool(
        counters={"gpu-0": {"memory": "8Gi"}},
        devices=[DeviceSpec("gpu-0-half-a", consumes_counters={"gpu-0": {"memory": "1Gi"}}), PARTITIONS[1]],
    )
    assert not same_content(counters, other_counters)
    assert not same_content(devices, other_devices)
    later = copy.deepcopy(counters)
    later["spec"]["pool"]["generation"] = 4
    assert same_content(later, counters)
    assert not same_content(later, counters, with_generation=True)


@pytest.mark.parametrize("apis", [[], ["v2"], ["v1", "v1beta1"]])
def test_health_apis_other_than_v1_and_v1alpha1_are_refused_naming_the_fix(apis):
    cfg = _config(health_service=True, health_apis=apis)
    with pytest.raises(BadInput, match=r"health_apis .* names none or other than \['v1', 'v1alpha1'\]") as refused:
        cfg.validate()
    assert "health_apis=['v1', 'v1alpha1']" in refused.value.fix


def test_declining_health_turns_the_health_service_on_as_the_helper_does():
    cfg = _config(patterns=["health-not-supported"])
    assert cfg.health_service is True
    assert cfg.advertised_versions == [
        "v1.DRAPlugin",
        "v1beta1.DRAPlugin",
        "v1.DRAResourceHealth",
        "v1alpha1.DRAResourceHealth",
    ]


def test_the_health_versions_the_config_names_are_the_ones_the_fake_serves():
    from device_conformance.fakes.dra_driver import health
    from device_conformance.fakes.dra_driver.config import HEALTH_APIS

    assert tuple(health.APIS) == HEALTH_APIS
    assert [health.service_name(api) for api in HEALTH_APIS] == ["v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"]
