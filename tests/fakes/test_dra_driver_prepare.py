"""The fake DRA driver process answering NodePrepare/NodeUnprepareResources over real gRPC, as the kubelet calls it."""

import json
import os
import shutil
import tempfile

import grpc
import pytest
from dra_configs import two_device_config

from device_conformance.core.errors import WaitTimeout
from device_conformance.fakes.dra_driver import DeviceSpec, DriverConfig
from device_conformance.fakes.dra_driver.handle import start
from device_conformance.fakes.dra_driver.kubelet_client import KubeletClient

V1 = "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"
V1BETA1 = "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"
CLAIM = ("ns-1", "uid-1", "claim-1")
OTHER = ("ns-1", "uid-2", "claim-2")


@pytest.fixture
def driver(tmp_path):
    sockets = tempfile.mkdtemp(prefix="dra-", dir="/tmp")  # tmp_path can exceed sun_path's 107 bytes
    handle = start(two_device_config(sockets, tmp_path), tmp_path / "driver")
    handle.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=[{"device": "dev-0", "request": "gpu"}])
    handle.push_allocation("uid-2", namespace="ns-1", name="claim-2", devices=["dev-1"])
    yield handle
    handle.cleanup()
    shutil.rmtree(sockets, ignore_errors=True)


@pytest.fixture
def kubelet(driver):
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as client:
        yield client


@pytest.mark.parametrize("version,service", [("v1.DRAPlugin", V1), ("v1beta1.DRAPlugin", V1BETA1)])
def test_prepare_answers_devices_and_writes_cdi_spec(driver, kubelet, tmp_path, version, service):
    response = kubelet.prepare([CLAIM], version=version)

    result = response.claims["uid-1"]
    assert result.error == ""
    assert [(list(d.request_names), d.pool_name, d.device_name, list(d.cdi_device_ids)) for d in result.devices] == [
        (["gpu"], "node-1", "dev-0", ["dra.example.com/device=uid-1-dev-0"])
    ]
    spec = json.loads((tmp_path / "cdi" / "dra.example.com-uid-1.json").read_text())
    assert spec["kind"] == "dra.example.com/device"
    assert spec["devices"] == [
        {
            "name": "uid-1-dev-0",
            "containerEdits": {"env": ["DRA_DEVICE_DEV_0=ns-1/claim-1", "DRA_CLAIM_UID_DEV_0=uid-1"]},
        }
    ]
    assert driver.prepared()["uid-1"]["name"] == "claim-1"
    assert [(c.service, c.method, c.socket) for c in driver.calls()] == [(service, "NodePrepareResources", "dra.sock")]


def test_unprepare_removes_cdi_spec_and_prepared_record(driver, kubelet, tmp_path):
    kubelet.prepare([CLAIM, OTHER])
    assert set(driver.prepared()) == {"uid-1", "uid-2"}

    response = kubelet.unprepare([CLAIM], version="v1beta1.DRAPlugin")

    assert response.claims["uid-1"].error == ""
    assert set(driver.prepared()) == {"uid-2"}
    assert sorted(os.listdir(tmp_path / "cdi")) == ["dra.example.com-uid-2.json"]


def test_claim_without_allocation_gets_a_per_claim_error(driver, kubelet):
    response = kubelet.prepare([CLAIM, ("ns-1", "uid-9", "unknown")])

    assert response.claims["uid-1"].error == ""
    assert "no allocation pushed" in response.claims["uid-9"].error
    assert (driver.calls()[-1].done, driver.calls()[-1].ok) == (True, False)
    assert driver.calls()[-1].outcome() == "claim error"


def test_prepare_grpc_failure_only_n_times(driver, kubelet):
    driver.fail_prepare("injected", code="UNAVAILABLE", times=2)

    for _ in range(2):
        with pytest.raises(grpc.RpcError) as err:
            kubelet.prepare([CLAIM])
        assert (err.value.code(), err.value.details()) == (grpc.StatusCode.UNAVAILABLE, "injected")
    assert kubelet.prepare([CLAIM]).claims["uid-1"].error == ""

    assert [c.ok for c in driver.calls("NodePrepareResources")] == [False, False, True]
    assert driver.calls()[0].error == {"code": "UNAVAILABLE", "message": "injected"}
    assert sum(c.ok for c in driver.calls("NodePrepareResources")) == 1


def test_per_claim_failure_hits_only_that_claim_until_cleared(driver, kubelet):
    driver.fail_prepare("claim broken", per_claim=True, claim_uid="uid-2")

    response = kubelet.prepare([CLAIM, OTHER])
    assert (response.claims["uid-1"].error, response.claims["uid-2"].error) == ("", "claim broken")
    assert set(driver.prepared()) == {"uid-1"}

    driver.clear_faults()
    assert kubelet.prepare([OTHER]).claims["uid-2"].error == ""


def test_unprepare_failure_then_success(driver, kubelet, tmp_path):
    kubelet.prepare([CLAIM])
    driver.fail_unprepare("cannot unprepare", times=1)

    with pytest.raises(grpc.RpcError) as err:
        kubelet.unprepare([CLAIM])
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    assert "uid-1" in driver.prepared()  # nothing undone by the failed call

    kubelet.unprepare([CLAIM])
    assert driver.prepared() == {}
    assert not (tmp_path / "cdi" / "dra.example.com-uid-1.json").exists()


def test_blocked_prepare_waits_for_unblock(driver, kubelet):
    driver.block_prepare(claim_uid="uid-1")
    pending = kubelet.prepare_future([CLAIM], timeout=30)

    held = driver.wait_for_blocked("NodePrepareResources", timeout=10)
    assert held[0].claims == ["uid-1"]
    assert kubelet.prepare([OTHER], timeout=10).claims["uid-2"].error == ""  # other claims go through
    assert not pending.done()

    driver.unblock()
    assert pending.result(timeout=10).claims["uid-1"].error == ""
    # Called first, finished last: the block held only uid-1.
    assert [c.claim_uids for c in driver.calls()] == [["uid-1"], ["uid-2"]]
    assert [c.claim_uids for c in sorted(driver.calls(), key=lambda c: c.ended_mono)] == [["uid-2"], ["uid-1"]]


def test_blocked_prepare_ends_at_the_callers_deadline(driver, kubelet):
    driver.block_prepare()

    with pytest.raises(grpc.RpcError) as err:
        kubelet.prepare([CLAIM], timeout=0.5)

    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    logged = driver.wait_for_call("NodePrepareResources", done=True, timeout=10)
    assert logged[0].error["code"] == "CANCELLED"
    assert driver.prepared() == {}


def test_wait_for_call_timeout_names_what_it_waited_for(driver, kubelet):
    kubelet.prepare([CLAIM])

    with pytest.raises(WaitTimeout) as err:
        driver.wait_for_call("NodeUnprepareResources", timeout=0.3)

    message = str(err.value)
    assert "1 NodeUnprepareResources call(s)" in message
    assert "#1 NodePrepareResources (ok)" in message


@pytest.fixture
def defective(tmp_path):
    """make(defects) -> a started driver with those defects and claim uid-1 allocated dev-0 and dev-1."""
    sockets = tempfile.mkdtemp(prefix="dra-", dir="/tmp")
    handles = []

    def make(defects):
        cfg = DriverConfig(
            driver_name="dra.example.com",
            node_name="node-1",
            registry_dir=f"{sockets}/registry",
            plugin_dir=f"{sockets}/plugins",
            cdi_dir=str(tmp_path / "cdi"),
            devices=[DeviceSpec("dev-0"), DeviceSpec("dev-1")],
            defects=defects,
        )
        handle = start(cfg, tmp_path / "driver")
        handles.append(handle)
        handle.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=["dev-0", "dev-1"])
        return handle

    yield make
    for handle in handles:
        handle.cleanup()
    shutil.rmtree(sockets, ignore_errors=True)


@pytest.mark.parametrize(
    "defects,answered",
    [
        ([], [("dev-0", ["dra.example.com/device=uid-1-dev-0"]), ("dev-1", ["dra.example.com/device=uid-1-dev-1"])]),
        (["prepare-without-cdi"], [("dev-0", []), ("dev-1", [])]),
        (["prepare-first-device-only"], [("dev-0", ["dra.example.com/device=uid-1-dev-0"])]),
    ],
)
def test_defects_change_only_the_prepare_answer(defective, tmp_path, defects, answered):
    driver = defective(defects)
    with KubeletClient(driver.config.registration_socket, driver.config.service_socket) as kubelet:
        response = kubelet.prepare([CLAIM])
    assert [(d.device_name, list(d.cdi_device_ids)) for d in response.claims["uid-1"].devices] == answered
    # What the driver holds is what a correct driver holds: the kubelet's answer is the only difference.
    assert [d["device_name"] for d in driver.prepared()["uid-1"]["devices"]] == ["dev-0", "dev-1"]
    assert os.listdir(tmp_path / "cdi") == ["dra.example.com-uid-1.json"]


def test_unknown_defect_is_refused():
    cfg = DriverConfig(driver_name="d", node_name="n", registry_dir="/r", plugin_dir="/p", defects=["typo"])
    cfg.control_socket, cfg.call_log = "/tmp/x.ctl", "/tmp/x.jsonl"
    with pytest.raises(Exception, match="unknown defects"):
        cfg.validate()
