"""dra_health_state (the DRA health-info cache, pkg/kubelet/cm/dra/healthinfo.go): read and written as a 1.37.1
kubelet does, against a file a real 1.37.1 kubelet wrote (recorded/), and saved/put back around a test."""

from pathlib import Path

import pytest

from device_conformance.kubelet_state import drahealth
from device_conformance.kubelet_state.saved import DRA_FILES, SavedFiles

RECORDED = Path(__file__).parent / "recorded" / "dra_health_state.v1.37.1"
# What suites/dra/test_dra_health.py::test_health_updates_reach_the_pod_status left on a 1.37.1 kubelet (local
# provider, 2026-11-28), read byte for byte.
RECORDED_BYTES = (
    b'{"dc-0c0c998c.example.com":{"Devices":{"dc-r5f7652/dev-0":{"PoolName":"dc-r5f7652","DeviceName":"dev-0",'
    b'"Health":"Healthy","LastUpdated":"2026-11-28T02:46:18.387156622Z","HealthCheckTimeout":30000000000,'
    b'"Message":""}}}}'
)
RECORDED_STATE = {
    "dc-0c0c998c.example.com": {
        "dc-r5f7652/dev-0": drahealth.DeviceHealth(
            "dc-r5f7652", "dev-0", "Healthy", "2026-11-28T02:46:18.387156622Z", 30_000_000_000, ""
        )
    }
}


def test_the_recorded_file_reads_and_writes_back_byte_for_byte():
    data = RECORDED.read_bytes()
    assert data == RECORDED_BYTES
    parsed = drahealth.parse(data)
    assert (parsed.valid, parsed.reason, parsed.state) == (True, "", RECORDED_STATE)
    assert (parsed.stored_checksum, parsed.computed_checksum) == (None, None)  # the kubelet writes none
    assert drahealth.encode(RECORDED_STATE) == data


def test_encode_is_json_marshal_keys_sorted_html_escaped_null_devices():
    state = {
        "b.example.com": None,
        "a.example.com": {
            "p/x": drahealth.DeviceHealth("p", "x", "Unhealthy", "2026-11-28T02:46:18Z", 0, "temp > 90 & rising"),
        },
    }
    assert drahealth.encode(state) == (
        b'{"a.example.com":{"Devices":{"p/x":{"PoolName":"p","DeviceName":"x","Health":"Unhealthy",'
        b'"LastUpdated":"2026-11-28T02:46:18Z","HealthCheckTimeout":0,"Message":"temp \\u003e 90 \\u0026 rising"}}},'
        b'"b.example.com":{"Devices":null}}'
    )
    assert drahealth.encode({}) == b"{}"  # what the kubelet leaves once every driver's data is cleared


@pytest.mark.parametrize(
    "data,reason",
    [
        (b"", "invalid JSON"),
        (b'{"d":{"Devices":{"p/x":{"Health":5}}}}', "json: cannot unmarshal number into Go struct field"),
        (
            b'{"d":{"Devices":{"p/x":{"LastUpdated":"28 Nov 2026"}}}}',
            'parsing time "28 Nov 2026" as RFC 3339 failed (LastUpdated of p/x)',
        ),
        (b'{"d":{"Devices":{"p/x":{"HealthCheckTimeout":"30s"}}}}', "json: cannot unmarshal string"),
    ],
)
def test_a_file_the_kubelet_fails_to_load_says_why(data, reason):
    parsed = drahealth.parse(data)
    assert not parsed.valid
    assert parsed.reason.startswith(reason), parsed.reason
    assert parsed.reason.endswith("(the kubelet logs 'Failed to load health checkpoint')")


def test_go_decoding_rules_apply_field_names_fold_and_unknown_fields_are_ignored():
    parsed = drahealth.parse(b'{"d":{"devices":{"p/x":{"poolname":"p","HEALTH":"Unknown","Extra":1}}}}')
    assert parsed.valid
    assert parsed.state == {"d": {"p/x": drahealth.DeviceHealth("p", "", "Unknown", "0001-01-01T00:00:00Z", 0, "")}}


def test_go_time_is_rfc3339nano_without_trailing_zeros():
    from datetime import UTC, datetime

    assert drahealth.go_time(datetime(2026, 11, 28, 2, 46, 18, 387150, tzinfo=UTC)) == "2026-11-28T02:46:18.38715Z"
    assert drahealth.go_time(datetime(2026, 11, 28, 2, 46, 18, tzinfo=UTC)) == "2026-11-28T02:46:18Z"


class MemoryNode:
    def __init__(self, files):
        self.files = dict(files)

    def read_file(self, path):
        if path not in self.files:
            raise FileNotFoundError(path)
        return self.files[path]

    def write_file(self, path, data, mode=0o600):
        self.files[path] = data

    def delete_file(self, path):
        self.files.pop(path, None)


def test_saved_files_come_back_and_an_absent_one_goes_again():
    node = MemoryNode({"/var/lib/kubelet/dra_manager_state": b"manager"})
    saved = SavedFiles.take(node)
    assert DRA_FILES == ("/var/lib/kubelet/dra_manager_state", "/var/lib/kubelet/dra_health_state")
    assert saved.files == {"/var/lib/kubelet/dra_manager_state": b"manager", "/var/lib/kubelet/dra_health_state": None}
    node.files = {"/var/lib/kubelet/dra_manager_state": b"forged", "/var/lib/kubelet/dra_health_state": b"{}"}
    saved.put_back(node)
    assert node.files == {"/var/lib/kubelet/dra_manager_state": b"manager"}
    node.files["/var/lib/kubelet/dra_health_state"] = RECORDED_BYTES
    again = SavedFiles.take(node)
    node.files["/var/lib/kubelet/dra_health_state"] = b"not json"
    again.put_back(node)
    assert node.files["/var/lib/kubelet/dra_health_state"] == RECORDED_BYTES
