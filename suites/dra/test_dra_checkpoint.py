"""The DRA manager's checkpoint, /var/lib/kubelet/dra_manager_state: what the kubelet writes, and what it does
with a forged file (right checksum: the entries are believed; wrong checksum: the kubelet refuses to start)."""

import uuid

import pytest

from device_conformance.framework import (
    SINCE_DRA,
    ConformanceError,
    Pending,
    claim_record,
    dra_checkpoint,
    dra_state,
    timeouts,
    until,
)

pytestmark = [pytest.mark.dra, pytest.mark.checkpoint, SINCE_DRA]


def test_checkpoint_records_the_prepared_claim(node, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.claim_pod("ckpt", driver)
    pod.wait_running()
    claim = pod.claim()
    uid = claim["metadata"]["uid"]

    entries = {e.claim_uid: e for e in dra_checkpoint(node).entries or []}
    assert uid in entries, f"checkpoint entries: {list(entries)}"
    entry = entries[uid]
    assert (entry.claim_name, entry.namespace, entry.pod_uids) == (claim["metadata"]["name"], pod.namespace, [pod.uid])
    assert claim_record(driver.calls("NodePrepareResources")) == [([uid], "ok")], "prepared exactly once"
    (prepared,) = driver.prepared()[uid]["devices"]
    assert list(entry.drivers) == [driver.config.driver_name]
    (device,) = entry.drivers[driver.config.driver_name]
    assert (device.pool_name, device.device_name, device.request_names, device.cdi_device_ids) == (
        prepared["pool_name"],
        "dev-0",
        ["dev"],
        prepared["cdi_device_ids"],
    )


def forged_entry(driver, namespace):
    return dra_state.ClaimInfoState(
        claim_uid=str(uuid.uuid4()),
        claim_name="forged-claim",
        namespace=namespace,
        pod_uids=[str(uuid.uuid4())],
        drivers={driver.config.driver_name: [dra_state.Device(driver.config.pool, "dev-0", ["dev"], [])]},
    )


@pytest.mark.disruptive
@pytest.mark.slow  # the DRA manager's reconcile loop runs every 60 s
def test_forged_checkpoint_with_right_checksum_is_believed(node, namespace, dra_driver, kubelet_restored):
    """An entry for a pod the kubelet never ran: the kubelet loads it and unprepares the claim through the
    driver (its reconcile loop treats the pod as gone), then drops it from the checkpoint."""
    driver = dra_driver(devices=("dev-0",))
    forged = forged_entry(driver, namespace)
    with node.kubelet.stopped():
        state = dra_checkpoint(node)
        state.entries = [*(state.entries or []), forged]
        node.write_file(dra_state.DEFAULT_PATH, dra_state.encode(state, share_id_field=True))
    driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)

    driver.wait_for_call("NodeUnprepareResources", done=True, timeout=timeouts.DRA_RECONCILE)
    calls = driver.calls("NodeUnprepareResources")
    asked = [(c.request.get("claims"), c.outcome()) for c in calls]
    claim = {"namespace": namespace, "uid": forged.claim_uid, "name": forged.claim_name}
    assert asked == [([claim], "ok")], "one NodeUnprepareResources for the forged claim"

    def dropped():
        parsed = dra_state.parse(node.read_file(dra_state.DEFAULT_PATH))
        if not parsed.valid:
            return Pending(f"dra_manager_state does not parse: {parsed.reason}")
        uids = [e.claim_uid for e in parsed.state.entries or []]
        return True if forged.claim_uid not in uids else Pending(f"entries {uids}")

    until(dropped, what="the forged claim to leave dra_manager_state", timeout=timeouts.DRA_CHECKPOINT_UPDATED)
    assert driver.calls("NodePrepareResources") == [], "no NodePrepareResources for a claim the kubelet only read"


@pytest.mark.disruptive
def test_forged_checkpoint_with_wrong_checksum_stops_the_kubelet(node, kubelet_restored):
    """Any read error of dra_manager_state is fatal for the kubelet's start (container manager creation)."""
    original = kubelet_restored
    parsed = dra_state.parse(original)
    assert parsed.valid, parsed.reason
    # Not kubelet.stopped(): the start in its cleanup would fail on the forged file and hide what failed.
    node.kubelet.stop()
    mark = node.kubelet.log_mark()
    bad = dra_state.encode(data=parsed.data, checksum=(parsed.stored_checksum + 1) % 2**32)
    node.write_file(dra_state.DEFAULT_PATH, bad)
    with pytest.raises(ConformanceError):
        node.kubelet.start()
    log = node.kubelet.log_since(mark)
    assert "checkpoint is corrupted" in log, log[-2000:]
    assert "dra_manager_state" in log, log[-2000:]
    assert not node.kubelet.healthy(), "the kubelet answers /healthz although its DRA checkpoint is corrupted"

    node.write_file(dra_state.DEFAULT_PATH, original)
    node.kubelet.start()
    assert node.kubelet.healthy(), "the kubelet is not healthy again with its original dra_manager_state"
