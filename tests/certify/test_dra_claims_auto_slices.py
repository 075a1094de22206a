"""`--claims auto` (certify/dra_auto_claims.py, dra_slice_devices.py) takes devices from every kind of
ResourceSlice that serves the node, as the scheduler does (staging/src/k8s.io/dynamic-resource-allocation/
structured/internal/stable/pools_stable.go GatherPools), and writes the allocation's nodeSelector as its allocator
does (allocator_stable.go createNodeSelector).

The slices are shaped as staging/src/k8s.io/api/resource/v1/types.go ResourceSliceSpec (exactly one of nodeName,
nodeSelector, allNodes, perDeviceNodeSelection) and Device (with perDeviceNodeSelection: the device's own nodeName,
nodeSelector or allNodes); resource/v1beta1 holds a device's fields under `basic` (BasicDevice)."""

from __future__ import annotations

import pytest
from test_dra_claims_auto import DRIVER, NODE, NODE_SELECTOR, FakeApi, claims_auto

from device_conformance.certify import dra_auto_claims as auto
from device_conformance.certify import dra_slice_devices as slice_devices
from device_conformance.certify.dra_slice_devices import Device
from device_conformance.core.errors import BadInput

LABELS = {"kubernetes.io/hostname": NODE, "rack": "r1"}
RACK = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
OTHER_RACK = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r2"]}]}]}


def network_slice(name, devices, *, pool="fabric", count=1, generation=1, version="v1", **selection):
    """A slice not tied to one node: `selection` is allNodes=True, nodeSelector=..., or perDeviceNodeSelection=True
    (then each device dict carries its own nodeName / nodeSelector / allNodes)."""
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceSlice",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            **selection,
            "devices": [d if isinstance(d, dict) else {"name": d} for d in devices],
        },
    }


def available(slices, labels=LABELS):
    return slice_devices.available_devices(slices, DRIVER, NODE, labels)


def test_an_all_nodes_slice_serves_the_node_and_its_allocation_names_no_node():
    devices, skipped = available([network_slice("s", ["nic-0", "nic-1"], allNodes=True)])
    assert devices == {Device("fabric", "nic-0"): None, Device("fabric", "nic-1"): None} and skipped == []
    assert auto.allocation(DRIVER, Device("fabric", "nic-0"), None) == {
        "devices": {"results": [{"request": "dev", "driver": DRIVER, "pool": "fabric", "device": "nic-0"}]}
    }


def test_a_node_selector_slice_serves_the_nodes_it_selects_and_its_term_is_the_allocations():
    slices = [network_slice("r1", ["a-0"], pool="rack-1", nodeSelector=RACK)]
    assert available(slices)[0] == {Device("rack-1", "a-0"): RACK}
    assert available(slices, {"rack": "r2"}) == ({}, [])
    assert available([network_slice("r2", ["b-0"], pool="rack-2", nodeSelector=OTHER_RACK)]) == ({}, [])


def test_per_device_node_selection_takes_each_devices_own_selection():
    devices = [
        {"name": "local", "nodeName": NODE},
        {"name": "elsewhere", "nodeName": "node-2"},
        {"name": "everywhere", "allNodes": True},
        {"name": "rack", "nodeSelector": RACK},
        {"name": "other-rack", "nodeSelector": OTHER_RACK},
    ]
    found, skipped = available([network_slice("p", devices, perDeviceNodeSelection=True)])
    assert found == {
        Device("fabric", "everywhere"): None,
        Device("fabric", "local"): NODE_SELECTOR,
        Device("fabric", "rack"): RACK,
    }
    assert skipped == []


def test_v1beta1_per_device_selection_is_read_under_basic():
    devices = [{"name": "local", "basic": {"nodeName": NODE}}, {"name": "far", "basic": {"nodeName": "node-2"}}]
    found, _ = available([network_slice("p", devices, version="v1beta1", perDeviceNodeSelection=True)])
    assert found == {Device("fabric", "local"): NODE_SELECTOR}


def test_a_pool_is_complete_with_its_slices_for_other_nodes_too():
    """resourceSliceCount counts every slice of the pool's generation, whatever nodes each serves."""
    both = [
        network_slice("mine", ["m-0"], count=2, nodeSelector=RACK),
        network_slice("theirs", ["t-0"], count=2, nodeSelector=OTHER_RACK),
    ]
    assert available(both)[0] == {Device("fabric", "m-0"): RACK}
    assert available(both[:1]) == ({}, ["pool fabric: 1 of 2 slices published so far"])
    newer = network_slice("mine-2", ["m-1"], count=1, generation=2, allNodes=True)
    assert available([*both, newer])[0] == {Device("fabric", "m-1"): None}, "the newest generation only"


def test_the_allocation_selector_is_the_schedulers_one_term_without_repeats():
    repeated = {
        "nodeSelectorTerms": [
            {
                "matchExpressions": [
                    {"key": "rack", "operator": "In", "values": ["r1", "r0"]},
                    {"key": "rack", "operator": "In", "values": ["r0", "r1"]},
                ],
                "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-9"]}],
            }
        ]
    }
    assert slice_devices.allocation_node_selector(("", False, repeated)) == {
        "nodeSelectorTerms": [
            {
                "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["node-9"]}],
                "matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1", "r0"]}],
            }
        ]
    }
    assert slice_devices.allocation_node_selector((NODE, False, None)) == NODE_SELECTOR
    assert slice_devices.allocation_node_selector(("", True, None)) is None


def test_a_node_selector_of_two_terms_is_left_out_as_the_allocator_refuses_it():
    two = {"nodeSelectorTerms": [RACK["nodeSelectorTerms"][0], OTHER_RACK["nodeSelectorTerms"][0]]}
    assert available([network_slice("s", ["x-0"], nodeSelector=two)]) == (
        {},
        ["fabric/x-0: a nodeSelector with 2 terms"],
    )


# -- through the API, as `--claims auto` runs ------------------------------------------------------------------


@pytest.mark.parametrize(
    "slices,selector",
    [
        ([network_slice("all", ["n-0", "n-1"], allNodes=True)], None),
        ([network_slice("rack", ["n-0", "n-1"], nodeSelector=RACK)], RACK),
        (
            [
                network_slice(
                    "per-device",
                    [
                        {"name": "n-0", "nodeName": NODE},
                        {"name": "n-1", "nodeName": NODE},
                        {"name": "x", "nodeName": "n2"},
                    ],
                    perDeviceNodeSelection=True,
                )
            ],
            NODE_SELECTOR,
        ),
    ],
    ids=["all-nodes", "node-selector", "per-device"],
)
def test_claims_are_made_from_slices_of_each_shape_with_the_schedulers_node_selector(slices, selector):
    api = FakeApi(slices, nodes={NODE: LABELS, "node-2": {"rack": "r2"}})
    maker = claims_auto(api)
    made = maker.make()
    assert sorted(d for devices in made.allocated.values() for d in devices) == ["n-0", "n-1"]
    stored = [c for key, c in api.claims.items() if key[0] == maker.namespace]
    assert len(stored) == 2
    for claim in stored:
        allocation = claim["status"]["allocation"]
        assert allocation.get("nodeSelector") == selector
        assert allocation["devices"]["results"][0]["pool"] == "fabric"
    maker.delete()
    assert api.left() == {}


def test_slices_selecting_other_nodes_only_are_no_slices_for_this_node_named_by_what_they_select():
    api = FakeApi([network_slice("rack-2", ["n-0"], nodeSelector=OTHER_RACK)], nodes={NODE: LABELS})
    with pytest.raises(BadInput) as raised:
        claims_auto(api, ceiling=1.0).make()
    assert raised.value.problem == (
        f"--claims auto: driver {DRIVER} published no ResourceSlice for node {NODE} within 1s; it has slices for "
        f"nodes matching {OTHER_RACK}"
    )
    assert "a spec.nodeSelector matching the node's labels" in raised.value.fix
    assert api.left() == {}
