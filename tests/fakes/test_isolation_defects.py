"""The fakes' isolation defects the black-box isolation tests (suites/*/test_*vendor_isolation.py) fail on: the
DRA driver writing every claim's device edits into the spec-level containerEdits of one spec shared by all its
claims, and the device plugin mounting the node's /dev into every container it answers for."""

import json
import shutil
import tempfile

import pytest
from dra_configs import two_device_config

from device_conformance.fakes.device_plugin import AllocateConfig, DevicePluginConfig, defects
from device_conformance.fakes.device_plugin.allocate import container_response
from device_conformance.fakes.device_plugin.config import HOST_DEV_MOUNT
from device_conformance.fakes.dra_driver.handle import start
from device_conformance.fakes.dra_driver.kubelet_client import KubeletClient

ONE, TWO = ("ns-1", "uid-1", "claim-1"), ("ns-1", "uid-2", "claim-2")


@pytest.fixture
def driver(tmp_path):
    """A started driver with the defect cdi-claim-edits-global: claim uid-1 is allocated dev-0, uid-2 dev-1."""
    sockets = tempfile.mkdtemp(prefix="dra-", dir="/tmp")
    handle = start(two_device_config(sockets, tmp_path, defects=["cdi-claim-edits-global"]), tmp_path / "driver")
    handle.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=["dev-0"])
    handle.push_allocation("uid-2", namespace="ns-1", name="claim-2", devices=["dev-1"])
    yield handle
    handle.cleanup()
    shutil.rmtree(sockets, ignore_errors=True)


def test_every_claims_device_env_goes_into_the_spec_level_edits_of_one_shared_spec(driver, tmp_path):
    shared = tmp_path / "cdi" / "dra.example.com-claims.json"
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        first = kubelet.prepare([ONE])
        second = kubelet.prepare([TWO])
        spec = json.loads(shared.read_text())
        ids = [list(r.claims[uid].devices[0].cdi_device_ids) for r, uid in ((first, "uid-1"), (second, "uid-2"))]
        assert ids == [["dra.example.com/device=uid-1-dev-0"], ["dra.example.com/device=uid-2-dev-1"]]
        assert [d["name"] for d in spec["devices"]] == ["uid-1-dev-0", "uid-2-dev-1"]
        one = ["DRA_DEVICE_DEV_0=ns-1/claim-1", "DRA_CLAIM_UID_DEV_0=uid-1"]
        two = ["DRA_DEVICE_DEV_1=ns-1/claim-2", "DRA_CLAIM_UID_DEV_1=uid-2"]
        assert [d["containerEdits"]["env"] for d in spec["devices"]] == [one, two], "each device keeps its own"
        assert spec["containerEdits"] == {"env": one + two}, "and the spec level carries both claims' env"
        assert sorted(p.name for p in shared.parent.iterdir()) == [shared.name], "no per-claim spec"

        kubelet.unprepare([ONE])
        spec = json.loads(shared.read_text())
        assert [d["name"] for d in spec["devices"]] == ["uid-2-dev-1"]
        assert spec["containerEdits"] == {"env": two}
        kubelet.unprepare([TWO])
    assert not shared.exists(), "the shared spec goes with its last claim"


def test_the_host_dev_defect_adds_a_read_only_mount_of_the_nodes_dev_to_every_answer():
    config = DevicePluginConfig(resource_name="example.com/dev", socket_dir="/tmp", socket_name="dp.sock")
    answer = container_response(AllocateConfig(envs={"DEVICES": "{ids}"}), ["dev-1"], "example.com/dev")
    assert list(defects.with_host_dev(config, answer).mounts) == []
    config.defects = ["allocate-mounts-host-dev"]
    [mount] = defects.with_host_dev(config, answer).mounts
    assert (mount.container_path, mount.host_path, mount.read_only) == (HOST_DEV_MOUNT, "/dev", True)
    assert dict(answer.envs) == {"DEVICES": "dev-1"}, "the rest of the answer is unchanged"
