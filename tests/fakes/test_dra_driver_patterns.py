"""The fake DRA driver's patterns (DriverConfig.patterns): behaviours real drivers have that the DRA API allows."""

import json
import os
import shutil
import tempfile
import time

import grpc
import pytest
from dra_configs import two_device_config

from device_conformance.core.errors import BadInput
from device_conformance.fakes.dra_driver.config import CLAIM_ERROR_SECONDS
from device_conformance.fakes.dra_driver.handle import start
from device_conformance.fakes.dra_driver.kubelet_client import KubeletClient
from device_conformance.wait.core import Pending, until

CLAIM = ("ns-1", "uid-1", "claim-1")
UNKNOWN = ("ns-1", "uid-x", "claim-x")


def config(sockets, tmp_path, patterns=(), defects=()):
    return two_device_config(sockets, tmp_path, patterns=list(patterns), defects=list(defects))


@pytest.fixture
def run(tmp_path):
    """run(patterns, defects) -> (handle, kubelet client); claim-1 is allocated dev-0."""
    sockets = tempfile.mkdtemp(prefix="drap-", dir="/tmp")  # tmp_path can exceed sun_path's 107 bytes
    opened = []

    def _run(patterns=(), defects=()):
        handle = start(config(sockets, tmp_path, patterns, defects), tmp_path / "driver")
        handle.push_allocation("uid-1", namespace="ns-1", name="claim-1", devices=[{"device": "dev-0"}])
        client = KubeletClient(handle.config.registration_socket, handle.config.service_socket)
        opened.append((handle, client))
        return handle, client

    yield _run
    for handle, client in opened:
        client.close()
        handle.cleanup()
    shutil.rmtree(sockets, ignore_errors=True)


def cdi_files(tmp_path):
    return sorted(os.listdir(tmp_path / "cdi"))


def test_fetch_claims_first_fails_the_whole_call_before_preparing_any(run, tmp_path):
    _, kubelet = run(["fetch-claims-first"])
    with pytest.raises(grpc.RpcError) as raised:
        kubelet.prepare([CLAIM, UNKNOWN])
    assert raised.value.code() == grpc.StatusCode.UNKNOWN
    assert raised.value.details() == (
        "get resource claims: retrieve claim ns-1/claim-x: no allocation pushed for ResourceClaim ns-1/claim-x "
        "(uid uid-x)"
    )
    assert cdi_files(tmp_path) == []
    assert list(kubelet.prepare([CLAIM]).claims) == ["uid-1"]


def test_cdi_common_device_is_written_at_start_and_listed_in_every_answer(run, tmp_path):
    _, kubelet = run(["cdi-common-device"])
    common = tmp_path / "cdi" / "dra.example.com-static-common.json"
    assert json.loads(common.read_text())["devices"] == [
        {
            "name": "common",
            "containerEdits": {"env": ["DRA_DRIVER_NAME=dra.example.com", "DRA_STATIC_DEVICE_COMMON=common"]},
        }
    ]
    devices = kubelet.prepare([CLAIM]).claims["uid-1"].devices
    assert [list(d.cdi_device_ids) for d in devices] == [
        ["dra.example.com/device=common", "dra.example.com/device=uid-1-dev-0"]
    ]
    kubelet.unprepare([CLAIM])
    assert cdi_files(tmp_path) == ["dra.example.com-static-common.json"]


def test_cdi_static_per_device_specs_are_named_and_never_removed(run, tmp_path):
    _, kubelet = run(["cdi-static-per-device"])
    static = ["dra.example.com-static-dev-0.json", "dra.example.com-static-dev-1.json"]
    assert cdi_files(tmp_path) == static
    devices = kubelet.prepare([CLAIM]).claims["uid-1"].devices
    assert [list(d.cdi_device_ids) for d in devices] == [["dra.example.com/device=dev-0"]]
    kubelet.unprepare([CLAIM])
    assert cdi_files(tmp_path) == static


def test_serve_after_notify_serves_only_once_registered(run):
    handle, kubelet = run(["serve-after-notify"])
    assert not os.path.exists(handle.config.service_socket)
    kubelet.notify(False, "RegisterPlugin error -- plugin validation failed")
    assert not os.path.exists(handle.config.service_socket)
    kubelet.notify(True)
    assert os.path.exists(handle.config.service_socket)
    assert kubelet.prepare([CLAIM]).claims["uid-1"].devices[0].device_name == "dev-0"


def test_prepare_no_devices_answers_none_and_writes_no_cdi_spec(run, tmp_path):
    handle, kubelet = run(["prepare-no-devices"])
    result = kubelet.prepare([CLAIM]).claims["uid-1"]
    assert (result.error, list(result.devices)) == ("", [])
    assert cdi_files(tmp_path) == []
    assert handle.prepared()["uid-1"]["devices"] == []
    assert kubelet.prepare([UNKNOWN]).claims["uid-x"].error == (
        "no allocation pushed for ResourceClaim ns-1/claim-x (uid uid-x)"
    )


def test_claim_error_once_fails_each_claims_first_prepare_and_unprepare_in_an_ok_answer(run, tmp_path):
    _, kubelet = run(["claim-error-once"])
    first = kubelet.prepare([CLAIM]).claims["uid-1"]
    assert (first.error, list(first.devices)) == ("transient failure, try again (pattern claim-error-once)", [])
    assert cdi_files(tmp_path) == []  # nothing prepared by the failed answer
    again = kubelet.prepare([CLAIM]).claims["uid-1"]
    assert (again.error, [d.device_name for d in again.devices]) == ("", ["dev-0"])
    assert kubelet.unprepare([CLAIM]).claims["uid-1"].error == "transient failure, try again (pattern claim-error-once)"
    assert cdi_files(tmp_path) == ["dra.example.com-uid-1.json"]  # still prepared
    assert kubelet.unprepare([CLAIM]).claims["uid-1"].error == ""
    assert cdi_files(tmp_path) == []


def first_success(kubelet, method):
    """Call `method` for CLAIM until its answer has no error (the driver's answer is the event waited on): the
    failed answers' errors, the successful answer and when the first call went out."""
    call = kubelet.prepare if method == "prepare" else kubelet.unprepare
    started, errors = time.monotonic(), []

    def probe():
        result = call([CLAIM]).claims["uid-1"]
        if result.error:
            errors.append(result.error)
            return Pending(result.error)
        return result

    return errors, until(probe, what=f"{method} of uid-1 without error", timeout=4 * CLAIM_ERROR_SECONDS), started


def test_claim_error_for_a_while_fails_each_claims_prepare_and_unprepare_until_its_window_from_the_first_call_ends(
    run, tmp_path
):
    _, kubelet = run(["claim-error-for-a-while"])
    errors, prepared, started = first_success(kubelet, "prepare")
    assert time.monotonic() - started >= CLAIM_ERROR_SECONDS
    assert len(errors) > 1 and set(errors) == {"device still being set up, try again (pattern claim-error-for-a-while)"}
    assert [d.device_name for d in prepared.devices] == ["dev-0"]
    assert kubelet.prepare([CLAIM]).claims["uid-1"].error == ""  # the window does not start again
    errors, unprepared, started = first_success(kubelet, "unprepare")  # unprepare's window is its own
    assert time.monotonic() - started >= CLAIM_ERROR_SECONDS
    assert (set(errors), unprepared.error) == (
        {"device still being set up, try again (pattern claim-error-for-a-while)"},
        "",
    )
    assert cdi_files(tmp_path) == []


def test_defect_prepare_unknown_claim_succeeds_answers_an_unknown_claim_as_prepared(run):
    _, kubelet = run(defects=["prepare-unknown-claim-succeeds"])
    result = kubelet.prepare([UNKNOWN]).claims["uid-x"]
    assert (result.error, list(result.devices)) == ("", [])


def test_unknown_patterns_are_refused(tmp_path):
    with pytest.raises(BadInput, match=r"unknown patterns \['nri'\]"):
        cfg = config("/tmp/x", tmp_path, ["nri"])
        cfg.control_socket, cfg.call_log = "/tmp/x/ctl.sock", "/tmp/x/calls.jsonl"
        cfg.validate()
