"""The DRA manager's checkpoint, /var/lib/kubelet/dra_manager_state: what the kubelet writes, and what it does
with a forged file (right checksum: the entries are believed; wrong checksum: the kubelet refuses to start)."""

import uuid

import pytest

from device_conformance.errors import ConformanceError
from device_conformance.expectations.dra import CLAIM_POD_START_TIMEOUT
from device_conformance.kubelet_state import dra as dra_state
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait
from device_conformance.wait.core import Pending, until

pytestmark = [pytest.mark.dra, pytest.mark.checkpoint]

POD_TIMEOUT = CLAIM_POD_START_TIMEOUT
REGISTRATION_TIMEOUT = 30
# Claims of pods the kubelet does not know are unprepared by the DRA manager's reconcile loop (60 s period,
# first run once all pod sources are ready).
RECONCILE_TIMEOUT = 150


def read_state(node):
    parsed = dra_state.parse(node.read_file(dra_state.DEFAULT_PATH))
    assert parsed.valid, parsed.reason
    return parsed.state


def test_checkpoint_records_the_prepared_claim(kube, node, namespace, dra_driver, dra_objects):
    driver = dra_driver(devices=("dev-0",))
    pod = dra_objects.pod("ckpt", template=dra_objects.template(driver.config.driver_name))
    pod = wait.for_pod_running_ready(kube, namespace, pod.metadata.name, timeout=POD_TIMEOUT)
    claim = dra_objects.get_claim(wait_dra.for_generated_claim(kube, namespace, pod.metadata.name, "dev"))
    uid = claim["metadata"]["uid"]

    entries = {e.claim_uid: e for e in read_state(node).entries or []}
    assert uid in entries, f"checkpoint entries: {list(entries)}"
    entry = entries[uid]
    assert (entry.claim_name, entry.namespace, entry.pod_uids) == (
        claim["metadata"]["name"],
        namespace,
        [pod.metadata.uid],
    )
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
    node.kubelet.stop()
    state = read_state(node)
    forged = forged_entry(driver, namespace)
    state.entries = [*(state.entries or []), forged]
    node.write_file(dra_state.DEFAULT_PATH, dra_state.encode(state, share_id_field=True))
    node.kubelet.start()
    driver.wait_for_registration(count=2, timeout=REGISTRATION_TIMEOUT)

    calls = driver.wait_for_call("NodeUnprepareResources", done=True, timeout=RECONCILE_TIMEOUT)
    assert calls[0].request["claims"] == [{"namespace": namespace, "uid": forged.claim_uid, "name": forged.claim_name}]
    assert calls[0].ok

    def dropped():
        uids = [e.claim_uid for e in read_state(node).entries or []]
        return True if forged.claim_uid not in uids else Pending(f"entries {uids}")

    until(dropped, what="the forged claim to leave dra_manager_state", timeout=REGISTRATION_TIMEOUT)
    assert driver.calls("NodePrepareResources") == []


@pytest.mark.disruptive
def test_forged_checkpoint_with_wrong_checksum_stops_the_kubelet(node, kubelet_restored):
    """Any read error of dra_manager_state is fatal for the kubelet's start (container manager creation)."""
    original = kubelet_restored
    parsed = dra_state.parse(original)
    assert parsed.valid, parsed.reason
    node.kubelet.stop()
    mark = node.kubelet.log_mark()
    bad = dra_state.encode(data=parsed.data, checksum=(parsed.stored_checksum + 1) % 2**32)
    node.write_file(dra_state.DEFAULT_PATH, bad)
    with pytest.raises(ConformanceError):
        node.kubelet.start()
    log = node.kubelet.log_since(mark)
    assert "checkpoint is corrupted" in log, log[-2000:]
    assert "dra_manager_state" in log
    assert not node.kubelet.healthy()

    node.write_file(dra_state.DEFAULT_PATH, original)
    node.kubelet.start()
    assert node.kubelet.healthy()
