"""DRA-SLICES judges every ResourceSlice of the driver that serves the node, as the scheduler decides it
(staging/src/k8s.io/dynamic-resource-allocation/structured/internal/stable/pools_stable.go GatherPools,
nodeMatches), in the newest resource.k8s.io version the API server serves.

The slices are shaped as staging/src/k8s.io/api/resource/v1/types.go ResourceSliceSpec allows: exactly one of
nodeName, allNodes, nodeSelector and perDeviceNodeSelection (then each Device has its own nodeName, allNodes or
nodeSelector; resource/v1beta1 holds them under `basic`). The kubernetes client is replaced by an in-memory API
server (Server) that answers field selectors on spec.driver and spec.nodeName as the real one does, so the same
tests ran against the code before this change (certify/resourceslices.py list_slices asked for
spec.nodeName=NODE, in v1 then v1beta2 then v1beta1 on 404). How each was seen failing there is in its docstring.
"""

from __future__ import annotations

import copy
import types

import pytest

from device_conformance.certify import limits, resourceslices
from device_conformance.certify.clauses import BY_ID
from device_conformance.certify.dra_driver import DraDriverCertifier, DraDriverTarget
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, run_step

DRIVER, NODE = "net.example.com", "node-1"
LABELS = {"kubernetes.io/hostname": NODE, "example.com/rack": "r1"}
RACK_1 = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "example.com/rack", "operator": "In", "values": ["r1"]}]}]
}
RACK_2 = {
    "nodeSelectorTerms": [{"matchExpressions": [{"key": "example.com/rack", "operator": "In", "values": ["r2"]}]}]
}
BY_NAME = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}


def a_slice(name, devices, *, pool="fabric", count=1, generation=1, **selection):
    """A ResourceSlice of DRIVER; `selection` is nodeName=..., allNodes=True, nodeSelector=... or
    perDeviceNodeSelection=True (then each device dict carries its own)."""
    return {
        "kind": "ResourceSlice",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": count},
            **selection,
            "devices": [d if isinstance(d, dict) else {"name": d} for d in devices],
        },
    }


class ApiException(Exception):
    def __init__(self, status, reason):
        super().__init__(f"({status}) {reason}")
        self.status, self.reason, self.body = status, reason, None


class Server:
    """ApisApi, CustomObjectsApi and CoreV1Api of an API server serving `served` of resource.k8s.io, holding
    `slices` and node NODE with `labels` (None: reading it answers `node_error`)."""

    def __init__(self) -> None:
        self.served = ["v1", "v1beta2", "v1beta1"]
        self.slices: list[dict] = []
        self.labels: dict[str, str] | None = dict(LABELS)
        self.node_error = ApiException(403, "Forbidden")
        self.listed: list[tuple[str, str]] = []  # (version, field selector) of each list

    def get_api_versions(self, **_):
        group = types.SimpleNamespace(
            name="resource.k8s.io", versions=[types.SimpleNamespace(version=v) for v in self.served]
        )
        return types.SimpleNamespace(groups=[group])

    def list_cluster_custom_object(self, group, version, plural, field_selector="", **_):
        assert (group, plural) == ("resource.k8s.io", "resourceslices")
        self.listed.append((version, field_selector))
        if version not in self.served:
            raise ApiException(404, "Not Found")
        wanted = dict(f.split("=", 1) for f in field_selector.split(",") if f)
        items = [
            {**copy.deepcopy(s), "apiVersion": f"resource.k8s.io/{version}"}
            for s in self.slices
            if all(str(s["spec"].get(k.removeprefix("spec."))) == v for k, v in wanted.items())
        ]
        return {"items": items}

    def read_node(self, name, **_):
        if name != NODE or self.labels is None:
            raise self.node_error if name == NODE else ApiException(404, "Not Found")
        return types.SimpleNamespace(metadata=types.SimpleNamespace(name=name, labels=dict(self.labels)))


@pytest.fixture
def server(monkeypatch):
    from kubernetes import client, config
    from kubernetes.client import exceptions

    api = Server()
    monkeypatch.setattr(exceptions, "ApiException", ApiException)
    monkeypatch.setattr(config, "new_client_from_config", lambda config_file: types.SimpleNamespace(close=lambda: 0))
    for name in ("ApisApi", "CustomObjectsApi", "CoreV1Api"):
        monkeypatch.setattr(client, name, lambda _=None: api)
    return api


def slices_step(server):
    target = DraDriverTarget(
        registry_dir="/nonexistent", driver=DRIVER, kubeconfig="kubeconfig", node_name=NODE, slices_timeout=0.0
    )
    return run_step(BY_ID["DRA-SLICES"], DraDriverCertifier(target).slices)


def test_an_all_nodes_slice_serves_the_node(server):
    """Before: FAIL 'no ResourceSlice of driver net.example.com for node node-1' (only spec.nodeName=NODE was
    listed)."""
    server.slices = [a_slice("fabric", ["nic-0"], allNodes=True)]
    result = slices_step(server)
    assert (result.verdict, result.message) == (PASS, "valid")


def test_a_node_selector_slice_serves_the_nodes_its_labels_select(server):
    """Before: FAIL 'no ResourceSlice ... for node node-1' for the selecting slice; the other rack's slice is no
    slice for the node, and the FAIL now names what the driver's slices serve (before: it did not)."""
    server.slices = [a_slice("rack-1", ["nic-0"], pool="rack-1", nodeSelector=RACK_1)]
    assert slices_step(server).verdict == PASS
    server.slices = [a_slice("rack-2", ["nic-0"], pool="rack-2", nodeSelector=RACK_2)]
    result = slices_step(server)
    assert (result.verdict, result.message) == (
        FAIL,
        f"now (after 0s): no ResourceSlice of driver {DRIVER} for node {NODE} (it has slices for nodes matching "
        f"{RACK_2})",
    )


@pytest.mark.parametrize(
    "devices",
    [
        [{"name": "local", "nodeName": NODE}, {"name": "far", "nodeName": "node-2"}],
        [{"name": "rack", "nodeSelector": RACK_1}],
        [{"name": "everywhere", "allNodes": True}],
        # resource/v1beta1: a device's node selection under `basic` (BasicDevice).
        [{"name": "local", "basic": {"nodeName": NODE}}],
    ],
    ids=["device-nodeName", "device-nodeSelector", "device-allNodes", "v1beta1-basic"],
)
def test_a_per_device_node_selection_slice_serves_the_node_of_one_of_its_devices(server, devices):
    """Before: FAIL 'no ResourceSlice ... for node node-1' (the slice has no spec.nodeName)."""
    server.slices = [a_slice("partitions", devices, perDeviceNodeSelection=True)]
    result = slices_step(server)
    assert (result.verdict, result.message) == (PASS, "valid")


def test_a_slice_serving_the_node_another_way_is_still_checked_for_validity(server):
    """Before: FAIL 'no ResourceSlice ... for node node-1' instead of the problem of the slice."""
    server.slices = [a_slice("fabric", ["NIC_0"], allNodes=True)]
    result = slices_step(server)
    assert (result.verdict, result.message) == (
        FAIL,
        "now (after 0s): slice 'fabric': device name 'NIC_0' is not a DNS label",
    )


def test_a_pool_is_counted_over_all_its_slices_whatever_nodes_they_serve(server):
    """resourceSliceCount is the pool's slices at the generation (types.go ResourcePool), so a pool whose slices
    serve two nodes is complete. Before: FAIL 'no ResourceSlice ... for node node-1'; counting only the slice
    serving the node would say '1 slice(s), resourceSliceCount says [2]'."""
    server.slices = [
        a_slice("fabric-a", [{"name": "a", "nodeName": NODE}], count=2, perDeviceNodeSelection=True),
        a_slice("fabric-b", [{"name": "b", "nodeName": "node-2"}], count=2, perDeviceNodeSelection=True),
    ]
    assert slices_step(server).verdict == PASS
    server.slices.pop()
    result = slices_step(server)
    assert (result.verdict, result.message) == (
        FAIL,
        "now (after 0s): pool 'fabric' generation 1: 1 slice(s), resourceSliceCount says [2]",
    )


def test_label_selected_slices_are_not_applicable_when_the_nodes_labels_cannot_be_read(server):
    """Never a FAIL for what cannot be judged. Before: FAIL 'no ResourceSlice ... for node node-1'."""
    server.labels = None
    server.slices = [a_slice("rack-1", ["nic-0"], pool="rack-1", nodeSelector=RACK_1)]
    result = slices_step(server)
    assert (result.verdict, result.message) == (
        NOT_APPLICABLE,
        f"now: 1 slice(s) of {DRIVER} select nodes by label and node {NODE}'s labels could not be read "
        "(reading Node node-1: HTTP 403 Forbidden)",
    )
    assert f"note: slice 'rack-1' (nodes matching {RACK_1}) not judged" in "\n".join(result.evidence)


def test_beside_a_node_slice_unreadable_label_selected_slices_are_a_note(server):
    """Before: PASS 'valid', saying nothing of the slice it never read."""
    server.labels = None
    server.slices = [
        a_slice("local", ["gpu-0"], pool=NODE, nodeName=NODE),
        a_slice("rack-1", ["nic-0"], pool="rack-1", nodeSelector=RACK_1),
    ]
    result = slices_step(server)
    assert (result.verdict, result.message) == (
        PASS,
        "valid; 1 slice(s) selecting nodes by label not judged (the Node's labels were not read)",
    )


def test_a_selector_by_node_name_needs_no_labels(server):
    """A nodeSelector of matchFields metadata.name only is decided without the Node's labels. Before: FAIL 'no
    ResourceSlice ... for node node-1'."""
    server.labels = None
    server.slices = [a_slice("named", ["nic-0"], nodeSelector=BY_NAME)]
    result = slices_step(server)
    assert (result.verdict, result.message) == (PASS, "valid")


@pytest.mark.parametrize("served", [["v1beta1"], ["v1beta1", "v1beta2"], ["v1beta1", "v1beta2", "v1"]])
def test_the_report_names_the_resource_version_read(server, monkeypatch, served):
    """1.32 serves v1beta1, 1.33 also v1beta2, 1.34+ also v1. Before: the report said resource.k8s.io/v1 whatever
    was read (failing for v1beta1 and v1beta2; right for v1)."""
    monkeypatch.setattr(limits, "REGISTER_TIMEOUT", 0.1)  # no driver here: registration fails at once
    server.served = served
    server.slices = [a_slice("local", ["gpu-0"], pool=NODE, nodeName=NODE)]
    target = DraDriverTarget(
        registry_dir="/nonexistent", driver=DRIVER, kubeconfig="kubeconfig", node_name=NODE, slices_timeout=0.0
    )
    cert = DraDriverCertifier(target).run()
    assert cert.verdict_of("DRA-SLICES") == PASS
    assert cert.api_versions[-1] == f"resource.k8s.io/{served[-1]} (ResourceSlice)"
    assert {version for version, _ in server.listed} == {served[-1]}


def test_a_server_without_resource_k8s_io_is_not_applicable(server):
    """Before: FAIL 'listing ResourceSlices failed: ApiException: (404) Not Found'."""
    server.served = []
    result = slices_step(server)
    assert (result.verdict, result.message) == (
        NOT_APPLICABLE,
        "now: the API server serves no version of resource.k8s.io (DRA)",
    )


@pytest.mark.parametrize(
    "spec,labels,serves",
    [
        ({"nodeName": NODE}, None, True),
        ({"nodeName": "node-2"}, None, False),
        ({"allNodes": True}, None, True),
        ({"nodeSelector": BY_NAME}, None, True),
        ({"nodeSelector": RACK_1}, None, None),
        ({"nodeSelector": RACK_1}, LABELS, True),
        ({"nodeSelector": RACK_2}, LABELS, False),
        # A term whose matchFields exclude the node is decided without labels (ANDed with its expressions).
        (
            {
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            **RACK_1["nodeSelectorTerms"][0],
                            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-2"]}],
                        }
                    ]
                }
            },
            None,
            False,
        ),
        ({"perDeviceNodeSelection": True, "devices": [{"name": "a", "nodeSelector": RACK_1}]}, None, None),
        ({"perDeviceNodeSelection": True, "devices": [{"name": "a", "nodeName": "node-2"}]}, None, False),
    ],
)
def test_whether_a_slice_serves_the_node(spec, labels, serves):
    assert resourceslices.serves({"spec": spec}, NODE, labels) is serves
