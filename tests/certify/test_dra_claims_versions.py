"""--claims in every served resource.k8s.io version (certify/dra_claims.py): ResourceClaim documents of v1, v1beta2
and v1beta1 in a --claims FILE, and API reads in the newest version the server serves.

The documents are shaped as the upstream types are: staging/src/k8s.io/api/resource/v1beta1/types.go (DeviceRequest
names its class itself: deviceClassName, allocationMode, count, firstAvailable), v1beta2/types.go and v1/types.go
(DeviceRequest.Exactly holds them, FirstAvailable the subrequests); status.allocation the same in all three
(AllocationResult.Devices.Results: request, driver, pool, device; NodeSelector)."""

from __future__ import annotations

import copy
import json
import types

import pytest
import yaml

from device_conformance.certify import dra_claims
from device_conformance.certify.dra_driver import load_claims
from device_conformance.cli.main import main
from device_conformance.core.errors import BadInput

DRIVER, NODE = "gpu.example.com", "node-1"
UID = "6f1c2a3e-0000-4000-8000-00000000000{}"
ON_NODE = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}]}


def requests(version: str) -> list[dict]:
    """One request `gpu` of two devices of class gpu.example.com, in the version's layout."""
    exact = {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}
    if version == "v1beta1":
        return [{"name": "gpu", **exact}]
    return [{"name": "gpu", "exactly": exact}]


def claim(version: str, n: int = 1, *, driver: str = DRIVER, node_selector: dict | None = ON_NODE) -> dict:
    """A ResourceClaim as `kubectl get resourceclaim -o yaml` prints one the scheduler allocated on node-1."""
    allocation = {
        "devices": {
            "results": [
                {"request": "gpu", "driver": driver, "pool": NODE, "device": "gpu-0"},
                {"request": "gpu", "driver": driver, "pool": NODE, "device": "gpu-1"},
            ]
        },
    }
    if node_selector is not None:
        allocation["nodeSelector"] = node_selector
    return {
        "apiVersion": f"resource.k8s.io/{version}",
        "kind": "ResourceClaim",
        "metadata": {"name": f"gpu-claim-{n}", "namespace": "ns-1", "uid": UID.format(n), "resourceVersion": "7"},
        "spec": {"devices": {"requests": requests(version)}},
        "status": {"allocation": allocation, "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}]},
    }


def first_available(version: str) -> dict:
    """A claim with a prioritized list (DeviceRequest.FirstAvailable, 1.33+ in v1beta1 too): the result names the
    chosen subrequest as <request>/<subrequest> (DeviceRequestAllocationResult.Request)."""
    obj = claim(version)
    obj["spec"]["devices"]["requests"] = [
        {
            "name": "gpu",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "big.gpu.example.com"},
                {"name": "small", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2},
            ],
        }
    ]
    for result in obj["status"]["allocation"]["devices"]["results"]:
        result["request"] = "gpu/small"
    return obj


VERSIONS = ["v1", "v1beta2", "v1beta1"]


def write(tmp_path, text: str):
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_claim_document_of_each_version_gives_the_claim_and_its_devices(tmp_path, version):
    path = write(tmp_path, yaml.safe_dump(claim(version)))
    assert load_claims(path, DRIVER, NODE) == (
        [("ns-1", UID.format(1), "gpu-claim-1")],
        {UID.format(1): ["gpu-0", "gpu-1"]},
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_a_prioritized_list_claim_of_each_version_is_read(tmp_path, version):
    path = write(tmp_path, json.dumps(first_available(version)))
    assert load_claims(path, DRIVER, NODE)[1] == {UID.format(1): ["gpu-0", "gpu-1"]}


def test_several_documents_a_list_and_old_style_entries_mix(tmp_path):
    as_list = {"apiVersion": "v1", "kind": "List", "items": [claim("v1beta2", 2), claim("v1", 3)]}
    entry = {"namespace": "ns-2", "name": "plain", "uid": "u-4", "devices": ["gpu-7"]}
    text = yaml.safe_dump_all([claim("v1beta1", 1), as_list, [entry]])
    claims, allocated = load_claims(write(tmp_path, text), DRIVER, NODE)
    assert claims == [
        ("ns-1", UID.format(1), "gpu-claim-1"),
        ("ns-1", UID.format(2), "gpu-claim-2"),
        ("ns-1", UID.format(3), "gpu-claim-3"),
        ("ns-2", "u-4", "plain"),
    ]
    assert allocated["u-4"] == ["gpu-7"] and allocated[UID.format(3)] == ["gpu-0", "gpu-1"]


def test_a_network_attached_allocation_without_node_selector_is_accepted(tmp_path):
    path = write(tmp_path, yaml.safe_dump(claim("v1", node_selector=None)))
    assert load_claims(path, DRIVER, NODE)[0] == [("ns-1", UID.format(1), "gpu-claim-1")]


def unallocated(version: str) -> dict:
    obj = claim(version)
    obj["status"] = {}
    return obj


def unknown_request(version: str) -> dict:
    obj = claim(version)
    obj["status"]["allocation"]["devices"]["results"][0]["request"] = "gpu/huge"
    return obj


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    "make,problem",
    [
        (unallocated, "claim ns-1/gpu-claim-1 is not allocated"),
        (
            lambda v: claim(v, driver="other.example.com"),
            "claim ns-1/gpu-claim-1 has no devices allocated from driver gpu.example.com (only from "
            "['other.example.com'])",
        ),
        (
            lambda v: claim(
                v, node_selector={"nodeSelectorTerms": [{"matchFields": [{**ON_NODE_FIELD, "values": ["node-2"]}]}]}
            ),
            "claim ns-1/gpu-claim-1 is allocated for node(s) ['node-2'], not node-1",
        ),
        (
            unknown_request,
            "claim ns-1/gpu-claim-1: allocation results name request(s) ['gpu/huge'] the claim does not have",
        ),
    ],
    ids=["unallocated", "other-driver", "other-node", "unknown-request"],
)
def test_a_claim_document_that_cannot_be_prepared_here_is_bad_input_naming_the_fix(tmp_path, version, make, problem):
    path = write(tmp_path, yaml.safe_dump(make(version)))
    with pytest.raises(BadInput) as raised:
        load_claims(path, DRIVER, NODE)
    assert raised.value.problem == f"--claims {path}: {problem}"
    assert raised.value.fix == dra_claims.FIX_FILE


ON_NODE_FIELD = {"key": "metadata.name", "operator": "In"}


@pytest.mark.parametrize(
    "doc,problem",
    [
        (
            {**claim("v1"), "apiVersion": "resource.k8s.io/v1alpha3"},
            "ResourceClaim ns-1/gpu-claim-1 (resource.k8s.io/v1alpha3) is not a ResourceClaim of resource.k8s.io "
            "v1/v1beta2/v1beta1",
        ),
        (
            {**claim("v1"), "kind": "DeviceClass"},
            "DeviceClass ns-1/gpu-claim-1 (resource.k8s.io/v1) is not a ResourceClaim of resource.k8s.io "
            "v1/v1beta2/v1beta1",
        ),
        ({**claim("v1"), "metadata": {"name": "x"}}, "ResourceClaim /x has no metadata.namespace, metadata.uid"),
        ([{"namespace": "ns"}], "entry 1 is neither a ResourceClaim nor {namespace, name, uid} (KeyError('uid'))"),
        ([], "it names no claim"),
    ],
    ids=["alpha", "kind", "metadata", "entry", "empty"],
)
def test_a_file_that_is_not_claims_is_bad_input(tmp_path, doc, problem):
    path = write(tmp_path, yaml.safe_dump(doc))
    with pytest.raises(BadInput) as raised:
        load_claims(path, DRIVER, NODE)
    assert raised.value.problem == f"--claims {path}: {problem}"


def test_the_cli_refuses_a_bad_claims_file_before_anything_starts(tmp_path, capsys):
    started = tmp_path / "started"
    path = write(tmp_path, yaml.safe_dump(unallocated("v1beta1")))
    argv = ["certify", "dra-driver", "--driver", DRIVER, "--node", NODE, "--claims", path]
    argv += ["--registry-dir", str(tmp_path / "reg"), "--command", f"touch {started}", "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--claims {path}: claim ns-1/gpu-claim-1 is not allocated" in err and "kubectl get resourceclaim" in err
    assert not started.exists() and not (tmp_path / "out").exists() and not (tmp_path / "reg").exists()


# -- claims on label-selected nodes --------------------------------------------------------------------------

BY_LABEL = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}
CLAIM = ("ns-1", UID.format(1), "gpu-claim-1")


def test_an_allocation_selecting_nodes_by_label_is_judged_on_the_nodes_labels():
    """A device of a slice with a nodeSelector (ResourceSliceSpec.NodeSelector) is allocated with that selector."""
    obj = claim("v1beta2", node_selector=BY_LABEL)
    assert dra_claims.claim_problems(CLAIM, obj, DRIVER, NODE, labels={"pool": "a"}) == []
    assert dra_claims.claim_problems(CLAIM, obj, DRIVER, NODE, labels={"pool": "b"}) == [
        f"claim ns-1/gpu-claim-1 is allocated for nodes matching {BY_LABEL}, which node node-1 does not match"
    ]
    assert dra_claims.claim_problems(CLAIM, obj, DRIVER, NODE) == [], "without the node's labels: not judged"


# -- the API server, in the newest version it serves ---------------------------------------------------------


class Api:
    """kubernetes.client's ApisApi and CustomObjectsApi for a server serving `served` of resource.k8s.io."""

    def __init__(self, served: list[str], objects: dict[str, dict]) -> None:
        self.served, self.objects, self.reads = served, objects, []

    def get_api_versions(self, **_):
        versions = [types.SimpleNamespace(version=v) for v in self.served]
        other = types.SimpleNamespace(name="apps", versions=[types.SimpleNamespace(version="v1")])
        return types.SimpleNamespace(groups=[other, types.SimpleNamespace(name="resource.k8s.io", versions=versions)])

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        from kubernetes.client.exceptions import ApiException

        self.reads.append((group, version, namespace, plural, name))
        if version not in self.served or name not in self.objects:
            raise ApiException(status=404, reason="Not Found")
        return copy.deepcopy(self.objects[name])


@pytest.fixture
def server(monkeypatch):
    """Installs an Api as the kubernetes client's; set .served and .objects."""
    from kubernetes import client, config

    api = Api([], {})
    monkeypatch.setattr(config, "new_client_from_config", lambda config_file: object())
    monkeypatch.setattr(client, "ApisApi", lambda _: api)
    monkeypatch.setattr(client, "CustomObjectsApi", lambda _: api)
    return api


@pytest.mark.parametrize(
    "served,version",
    [
        (["v1beta1"], "v1beta1"),  # 1.32
        (["v1beta1", "v1beta2"], "v1beta2"),  # 1.33
        (["v1", "v1beta1", "v1beta2"], "v1"),  # 1.34+
    ],
)
def test_claims_are_read_in_the_newest_version_the_server_serves(server, served, version):
    server.served, server.objects = served, {"gpu-claim-1": claim(version)}
    read = dra_claims.api_reader("kc")
    obj = read("ns-1", "gpu-claim-1")
    assert server.reads == [("resource.k8s.io", version, "ns-1", "resourceclaims", "gpu-claim-1")]
    assert dra_claims.claim_problems(CLAIM, obj, DRIVER, NODE, ["gpu-0", "gpu-1"]) == []
    assert read("ns-1", "gone") is None


def test_a_server_without_a_known_version_is_bad_input(server):
    server.served = ["v1alpha3"]
    with pytest.raises(BadInput) as raised:
        dra_claims.api_reader("kc")
    assert raised.value.problem == "--claims: the API server serves only ['v1alpha3'] of resource.k8s.io (DRA)"
    assert raised.value.fix == dra_claims.FIX_API
