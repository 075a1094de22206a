"""--claims checked against the API server before anything starts (certify/dra_claims.py), on recorded
resource.k8s.io/v1 ResourceClaim objects: a stale or foreign claim is the user's input, never the driver's FAIL."""

import copy

import pytest

from device_conformance.certify import dra_claims
from device_conformance.certify.dra_driver import DraDriverTarget, certify_dra_driver
from device_conformance.core.errors import BadInput

DRIVER, NODE = "gpu.example.com", "node-1"
CLAIM = ("ns-1", "6f1c2a3e-0000-4000-8000-000000000001", "gpu-claim")
# As `kubectl get resourceclaim -n ns-1 gpu-claim -o json` shows a claim the scheduler allocated on node-1.
RECORDED = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpu-claim", "namespace": "ns-1", "uid": "6f1c2a3e-0000-4000-8000-000000000001"},
    "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {"request": "gpu", "driver": DRIVER, "pool": NODE, "device": "gpu-0"},
                    {"request": "gpu", "driver": DRIVER, "pool": NODE, "device": "gpu-1"},
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}]
            },
        }
    },
}


def edited(edit):
    obj = copy.deepcopy(RECORDED)
    edit(obj)
    return obj


def test_an_allocated_claim_of_this_driver_and_node_has_no_problems():
    assert dra_claims.claim_problems(CLAIM, RECORDED, DRIVER, NODE, ["gpu-1", "gpu-0"]) == []
    assert dra_claims.claim_problems(CLAIM, RECORDED, DRIVER, None) == []


@pytest.mark.parametrize(
    "obj,node,devices,problem",
    [
        (None, NODE, None, "claim ns-1/gpu-claim does not exist in the API server"),
        (
            edited(lambda o: o["metadata"].update(uid="6f1c2a3e-0000-4000-8000-000000000002")),
            NODE,
            None,
            "claim ns-1/gpu-claim was replaced: --claims has UID 6f1c2a3e-0000-4000-8000-000000000001, "
            "the API server has 6f1c2a3e-0000-4000-8000-000000000002",
        ),
        (edited(lambda o: o.update(status={})), NODE, None, "claim ns-1/gpu-claim is not allocated"),
        (
            edited(
                lambda o: [
                    r.update(driver="other.example.com") for r in o["status"]["allocation"]["devices"]["results"]
                ]
            ),
            NODE,
            None,
            "claim ns-1/gpu-claim has no devices allocated from driver gpu.example.com (only from "
            "['other.example.com'])",
        ),
        (RECORDED, "node-2", None, "claim ns-1/gpu-claim is allocated for node(s) ['node-1'], not node-2"),
        (
            RECORDED,
            NODE,
            ["gpu-0"],
            "claim ns-1/gpu-claim: --claims lists devices ['gpu-0'], the allocation has ['gpu-0', 'gpu-1']",
        ),
    ],
    ids=["missing", "replaced", "unallocated", "other-driver", "other-node", "other-devices"],
)
def test_each_bad_input_is_named(obj, node, devices, problem):
    assert dra_claims.claim_problems(CLAIM, obj, DRIVER, node, devices) == [problem]


def test_a_network_attached_allocation_names_no_node_and_passes():
    obj = edited(lambda o: o["status"]["allocation"].pop("nodeSelector"))
    assert dra_claims.claim_problems(CLAIM, obj, DRIVER, NODE) == []


def test_certify_stops_with_bad_input_before_starting_the_subject(tmp_path):
    started = tmp_path / "started"
    target = DraDriverTarget(
        registry_dir=str(tmp_path / "registry"),
        driver=DRIVER,
        command=f"touch {started}",
        claims=[CLAIM],
        kubeconfig="kubeconfig",
        node_name=NODE,
        workdir=tmp_path / "work",
    )
    replaced = edited(lambda o: o["metadata"].update(uid="new"))
    with pytest.raises(BadInput) as raised:
        certify_dra_driver(target, read_claim=lambda namespace, name: replaced)
    assert raised.value.problem == (
        "--claims: claim ns-1/gpu-claim was replaced: --claims has UID 6f1c2a3e-0000-4000-8000-000000000001, "
        "the API server has new"
    )
    assert raised.value.fix == dra_claims.FIX
    assert not started.exists() and not (tmp_path / "work").exists()
