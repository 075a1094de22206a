"""The kubelet's checkpoint files as a scenario reads them off the node: the device manager's
kubelet_internal_checkpoint and the DRA manager's dra_manager_state, parsed with the project's codecs
(kubelet_state/), and the kubelet's warning when it cannot read the device manager's one."""

from __future__ import annotations

from typing import Any, Protocol

from device_conformance.core import timeouts
from device_conformance.expectations.deviceplugin import CHECKPOINT_READ_WARNING
from device_conformance.kubelet_state import devicemanager
from device_conformance.kubelet_state import dra as dra_state
from device_conformance.wait.core import Pending, until


class NodeFiles(Protocol):
    """What reading a checkpoint needs of a node's control: its files."""

    def read_file(self, path: str) -> bytes: ...


class HasUID(Protocol):
    uid: str


def device_checkpoint(node: NodeFiles) -> devicemanager.Checkpoint:
    """The device manager's checkpoint as the kubelet wrote it; it must parse."""
    parsed = devicemanager.parse(node.read_file(devicemanager.DEFAULT_PATH))
    assert parsed.valid, f"the kubelet's checkpoint does not parse: {parsed.reason}"
    return parsed.checkpoint


def devices_by_container(
    entries: list[devicemanager.PodDevicesEntry], pod_uid: str, resource: str | None = None
) -> dict[str, list[str]]:
    """{container: sorted device IDs} of the entries of pod `pod_uid` (of `resource` only, when given)."""
    return {
        e.container_name: sorted(e.devices())
        for e in entries
        if e.pod_uid == pod_uid and (resource is None or e.resource_name == resource)
    }


def checkpointed_devices(node: NodeFiles, pod: HasUID, resource: str | None = None) -> dict[str, list[str]]:
    """{container: sorted device IDs} the device manager's checkpoint records for `pod` (and `resource`)."""
    return devices_by_container(device_checkpoint(node).entries or [], pod.uid, resource)


def dra_checkpoint(node: NodeFiles) -> dra_state.DRAState:
    """The DRA manager's dra_manager_state as the kubelet wrote it; it must parse."""
    parsed = dra_state.parse(node.read_file(dra_state.DEFAULT_PATH))
    assert parsed.valid and parsed.state is not None, parsed.reason
    return parsed.state


def claim_entry(state: dra_state.DRAState, uid: str) -> dra_state.ClaimInfoState:
    """The entry of claim `uid` in a dra_manager_state; it must have one."""
    entries = {e.claim_uid: e for e in state.entries or []}
    assert uid in entries, f"claim {uid} is not in dra_manager_state; its entries: {sorted(entries)}"
    return entries[uid]


def dra_checkpoint_entry(node: NodeFiles, uid: str) -> dra_state.ClaimInfoState:
    """The entry of claim `uid` in the kubelet's dra_manager_state now."""
    return claim_entry(dra_checkpoint(node), uid)


def wait_checkpoint_warning(node: Any, mark: int) -> None:
    """Until the kubelet logs, since log mark `mark`, that it could not read its device-manager checkpoint
    (CHECKPOINT_READ_WARNING)."""

    def logged() -> bool | Pending:
        log = node.kubelet.log_since(mark)
        return True if CHECKPOINT_READ_WARNING in log else Pending("no checkpoint warning in the kubelet log yet")

    until(logged, what=f"the kubelet to log {CHECKPOINT_READ_WARNING!r}", timeout=timeouts.KUBELET_LOG_LINE)
