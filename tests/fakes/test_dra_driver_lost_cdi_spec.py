"""The fake DRA driver after its CDI spec was lost (a reboot empties /var/run/cdi, its state stays): a second
NodePrepareResources writes the spec again, unless the driver has the kubernetes#141433 defect."""

import json
import shutil
import tempfile

import pytest
from dra_configs import two_device_config

from device_conformance.fakes.dra_driver.handle import start
from device_conformance.fakes.dra_driver.kubelet_client import KubeletClient

CLAIM = ("ns-1", "uid-1", "claim-1")


@pytest.fixture
def make(tmp_path):
    """make(defects) -> a started driver whose claim uid-1 is allocated dev-0 and dev-1."""
    sockets = tempfile.mkdtemp(prefix="dra-", dir="/tmp")
    handles = []

    def start_driver(defects):
        handle = start(two_device_config(sockets, tmp_path, defects=defects), tmp_path / "driver")
        handles.append(handle)
        handle.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=["dev-0", "dev-1"])
        return handle

    yield start_driver
    for handle in handles:
        handle.cleanup()
    shutil.rmtree(sockets, ignore_errors=True)


def prepare_twice_losing_the_spec(driver, spec):
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        first = kubelet.prepare([CLAIM])
        written = json.loads(spec.read_text())
        spec.unlink()
        second = kubelet.prepare([CLAIM])
    ids = [[list(d.cdi_device_ids) for d in r.claims["uid-1"].devices] for r in (first, second)]
    return written, ids


def test_prepare_of_a_prepared_claim_writes_its_lost_cdi_spec_again(make, tmp_path):
    spec = tmp_path / "cdi" / "dra.example.com-uid-1.json"
    written, (first, second) = prepare_twice_losing_the_spec(make([]), spec)
    assert second == first == [["dra.example.com/device=uid-1-dev-0"], ["dra.example.com/device=uid-1-dev-1"]]
    assert json.loads(spec.read_text()) == written


def test_the_141433_defect_answers_from_state_and_leaves_the_spec_lost(make, tmp_path):
    spec = tmp_path / "cdi" / "dra.example.com-uid-1.json"
    _, (first, second) = prepare_twice_losing_the_spec(make(["prepare-keeps-lost-cdi-spec"]), spec)
    assert second == first, "the same CDI IDs, which the runtime can no longer resolve"
    assert not spec.exists()
