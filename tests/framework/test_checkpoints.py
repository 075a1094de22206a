"""framework/checkpoints.py: the kubelet's checkpoint files as a scenario reads them, from files the project's
codecs write (no node, no kubelet)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from device_conformance.expectations.deviceplugin import CHECKPOINT_READ_WARNING
from device_conformance.framework import checkpoints
from device_conformance.kubelet_state import devicemanager
from device_conformance.kubelet_state import dra as dra_state


class Node:
    """A node's files, by path."""

    def __init__(self, files: dict[str, bytes]):
        self.files = files

    def read_file(self, path: str) -> bytes:
        return self.files[path]


def device_node(checksum: int | None = None) -> Node:
    cp = devicemanager.Checkpoint(
        entries=[
            devicemanager.PodDevicesEntry("pod-a", "main", "example.com/gpu", {0: ["dev-1", "dev-0"]}, b""),
            devicemanager.PodDevicesEntry("pod-a", "init", "example.com/gpu", {-1: ["dev-1"]}, b""),
            devicemanager.PodDevicesEntry("pod-a", "main", "example.com/nic", {0: ["nic-0"]}, b""),
            devicemanager.PodDevicesEntry("pod-b", "main", "example.com/gpu", {1: ["dev-2"]}, b""),
        ],
        registered_devices={"example.com/gpu": ["dev-0", "dev-1", "dev-2"]},
    )
    return Node({devicemanager.DEFAULT_PATH: devicemanager.encode_v2(cp, checksum=checksum)})


def test_the_device_checkpoint_parses_and_a_corrupt_one_says_so():
    checkpoint = checkpoints.device_checkpoint(device_node())
    assert checkpoint.registered_devices == {"example.com/gpu": ["dev-0", "dev-1", "dev-2"]}
    with pytest.raises(AssertionError, match=r"the kubelet's checkpoint does not parse: .*checksum"):
        checkpoints.device_checkpoint(device_node(checksum=1))


def test_checkpointed_devices_are_the_pods_per_container_sorted_of_one_resource_when_given():
    node, pod = device_node(), SimpleNamespace(uid="pod-a")
    # Without a resource, a container's later entry of another resource wins (as the suites' readers had it).
    assert checkpoints.checkpointed_devices(node, pod) == {"main": ["nic-0"], "init": ["dev-1"]}
    assert checkpoints.checkpointed_devices(node, pod, "example.com/gpu") == {
        "main": ["dev-0", "dev-1"],
        "init": ["dev-1"],
    }
    assert checkpoints.checkpointed_devices(node, SimpleNamespace(uid="pod-c")) == {}


def dra_node(**encode) -> Node:
    state = dra_state.DRAState(
        entries=[
            dra_state.ClaimInfoState(
                claim_uid="claim-1",
                claim_name="c1",
                namespace="ns",
                pod_uids=["pod-a"],
                drivers={"dra.example.com": [dra_state.Device("pool", "dev-0", ["dev"], ["cdi/dev=0"])]},
            )
        ]
    )
    return Node({dra_state.DEFAULT_PATH: dra_state.encode(state, **encode)})


def test_the_dra_checkpoint_and_a_claims_entry():
    node = dra_node()
    assert [e.claim_uid for e in checkpoints.dra_checkpoint(node).entries] == ["claim-1"]
    entry = checkpoints.dra_checkpoint_entry(node, "claim-1")
    assert (entry.claim_name, entry.pod_uids) == ("c1", ["pod-a"])
    assert entry.drivers["dra.example.com"][0].device_name == "dev-0"
    with pytest.raises(AssertionError, match=r"claim claim-2 is not in dra_manager_state; its entries: \['claim-1'\]"):
        checkpoints.dra_checkpoint_entry(node, "claim-2")


def test_a_dra_checkpoint_with_a_wrong_checksum_fails_with_the_parsers_reason():
    with pytest.raises(AssertionError, match="checksum mismatch"):
        checkpoints.dra_checkpoint(dra_node(checksum=1))


def test_the_checkpoint_warning_is_awaited_in_the_kubelet_log_since_the_mark():
    logs = {3: f"W1128 manager.go:123] {CHECKPOINT_READ_WARNING} err=checksum"}
    node = SimpleNamespace(kubelet=SimpleNamespace(log_since=lambda mark: logs.get(mark, "")))
    checkpoints.wait_checkpoint_warning(node, 3)
