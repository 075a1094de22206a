"""dra_manager_state: upstream v1.37.1 unit-test vectors, the pre-1.30 legacy format, Go-generated vectors."""

import json
from pathlib import Path

import pytest

from device_conformance.kubelet_state import dra

GO = json.loads((Path(__file__).parent / "vectors" / "devicemanager_go_vectors.json").read_text())["dra"]

# Upstream unit-test vectors: pkg/kubelet/cm/dra/state/checkpointer_test.go at v1.37.1 (the kubelet writes the
# list under "ClaimInfoStateList"; "Entries" appears only in upstream's incorrect-checksum case, and a 1.37.1
# kubelet was seen writing ClaimInfoStateList on a real node).
ONE_CLAIM = (
    rb'{"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"ClaimInfoStateList\":[{'
    rb"\"ClaimUID\":\"067798be-454e-4be4-9047-1aa06aea63f7\",\"ClaimName\":\"example\",\"Namespace\":\"default\","
    rb"\"PodUIDs\":{\"139cdb46-f989-4f17-9561-ca10cfb509a6\":{}},\"DriverState\":{\"test-driver.cdi.k8s.io\":{"
    rb"\"Devices\":[{\"PoolName\":\"worker-1\",\"DeviceName\":\"dev-1\",\"RequestNames\":[\"test request\"],"
    rb'\"CDIDeviceIDs\":[\"example.com/example=cdi-example\"]}]}}}]}","Checksum":1656016162}'
)
# The same claim as a 1.35+ kubelet writes it (ShareID null), upstream v1.37.1 "single-claim-info-state".
ONE_CLAIM_135 = ONE_CLAIM.replace(
    rb"\"DeviceName\":\"dev-1\",", rb"\"DeviceName\":\"dev-1\",\"ShareID\":null,"
).replace(b"1656016162", b"2570581864")
TWO_CLAIMS_DATA = (
    r"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"ClaimInfoStateList\":[{\"ClaimUID\":"
    r"\"067798be-454e-4be4-9047-1aa06aea63f7\",\"ClaimName\":\"example-1\",\"Namespace\":\"default\",\"PodUIDs\":{"
    r"\"139cdb46-f989-4f17-9561-ca10cfb509a6\":{}},\"DriverState\":{\"test-driver.cdi.k8s.io\":{\"Devices\":[{"
    r"\"PoolName\":\"worker-1\",\"DeviceName\":\"dev-1\",\"RequestNames\":[\"test request\"],\"CDIDeviceIDs\":["
    r"\"example.com/example=cdi-example\"]}]}}},{\"ClaimUID\":\"4cf8db2d-06c0-7d70-1a51-e59b25b2c16c\",\"ClaimName\":"
    r"\"example-2\",\"Namespace\":\"default\",\"PodUIDs\":{\"139cdb46-f989-4f17-9561-ca10cfb509a6\":{}},"
    r"\"DriverState\":{\"test-driver.cdi.k8s.io\":{\"Devices\":[{\"PoolName\":\"worker-1\",\"DeviceName\":\"dev-2\","
    r"\"RequestNames\":null,\"CDIDeviceIDs\":null}]}}}]}"
)
TWO_CLAIMS = ('{"Data":"' + TWO_CLAIMS_DATA + '","Checksum":1582256999}').encode()
# Upstream's "incorrect-checksum" case: its Data uses the key "Entries"; 2930258365 is not its CRC.
BAD_DATA = TWO_CLAIMS_DATA.replace("ClaimInfoStateList", "Entries")
TWO_CLAIMS_BAD = ('{"Data":"' + BAD_DATA + '","Checksum":2930258365}').encode()
# The legacy (pre-checkpoint.dra.kubelet.k8s.io) dra_manager_state format.
LEGACY = (
    b'{"version":"v1","entries":[{"DriverName":"test-driver.cdi.k8s.io","ClassName":"class-name","ClaimUID":'
    b'"067798be-454e-4be4-9047-1aa06aea63f7","ClaimName":"example","Namespace":"default","PodUIDs":{'
    b'"139cdb46-f989-4f17-9561-ca10cfb509a6":{}},"CDIDevices":{"test-driver.cdi.k8s.io":'
    b'["example.com/example=cdi-example"]}}],"checksum":153446146}'
)


def _claim(name: str, devices: list) -> dra.ClaimInfoState:
    return dra.ClaimInfoState(
        "067798be-454e-4be4-9047-1aa06aea63f7",
        name,
        "default",
        ["139cdb46-f989-4f17-9561-ca10cfb509a6"],
        {"test-driver.cdi.k8s.io": devices},
    )


DEV1 = dra.Device("worker-1", "dev-1", ["test request"], ["example.com/example=cdi-example"])


@pytest.mark.parametrize(
    ("data", "checksum", "share_id_field"),
    [(ONE_CLAIM, 1656016162, False), (ONE_CLAIM_135, 2570581864, True), (TWO_CLAIMS, 1582256999, False)],
)
def test_upstream_vectors_verify_and_reencode(data, checksum, share_id_field):
    parsed = dra.parse(data)
    assert parsed.format == "v1" and parsed.valid, parsed.reason
    assert parsed.stored_checksum == parsed.computed_checksum == checksum
    assert dra.encode(parsed.state, share_id_field=share_id_field) == data  # byte for byte what json.Marshal wrote


def test_decoded_claims_keep_null_lists():
    state = dra.parse(TWO_CLAIMS).state
    assert state.entries[0] == _claim("example-1", [DEV1])
    second = state.entries[1]
    assert (second.claim_uid, second.claim_name) == ("4cf8db2d-06c0-7d70-1a51-e59b25b2c16c", "example-2")
    assert second.drivers == {"test-driver.cdi.k8s.io": [dra.Device("worker-1", "dev-2", None, None)]}


def test_upstream_incorrect_checksum_case_is_rejected():
    parsed = dra.parse(TWO_CLAIMS_BAD)
    assert not parsed.valid
    assert parsed.stored_checksum == 2930258365
    assert parsed.computed_checksum == dra.crc32_checksum(BAD_DATA.replace("\\", ""))
    assert "checksum mismatch" in parsed.reason


def test_multi_device_vector_from_a_model():
    dev2 = dra.Device("worker-1", "dev-2", ["test request"], ["example.com/example=cdi-example"])
    data = dra.encode(dra.DRAState([_claim("example", [DEV1, dev2])]))
    parsed = dra.parse(data)
    # upstream v1.37.1 "claim-info-state-with-multiple-devices" (1.31-1.34 layout, no ShareID)
    assert parsed.valid and parsed.stored_checksum == 3369508096
    assert dra.crc32_checksum(parsed.data) == 3369508096


def test_checksum_covers_the_data_string_verbatim():
    # any whitespace/key order inside Data is fine as long as the CRC is over those exact bytes
    text = '{ "ClaimInfoStateList" : [ {"ClaimUID":"u","Unknown":1} ] }'
    parsed = dra.parse(dra.encode(data=text))
    assert parsed.valid and parsed.state.entries[0].claim_uid == "u"
    assert not dra.parse(dra.encode(data=text, checksum=dra.crc32_checksum(text) + 1)).valid


def test_data_that_does_not_decode_is_rejected_despite_a_good_crc():
    parsed = dra.parse(dra.encode(data='{"ClaimInfoStateList":{}}'))
    assert parsed.stored_checksum == parsed.computed_checksum
    assert not parsed.valid and parsed.reason.startswith("Data does not decode")


def test_share_id_needs_the_1_35_field():
    state = dra.DRAState([_claim("c", [dra.Device("p", "d", share_id="s1")])])
    with pytest.raises(ValueError, match="share_id_field"):
        dra.encode(state)
    data = dra.encode(state, share_id_field=True)
    assert b'\\"ShareID\\":\\"s1\\"' in data
    assert dra.parse(data).state.entries[0].drivers["test-driver.cdi.k8s.io"][0].share_id == "s1"


def test_api_facts_6_2_legacy_vector():
    parsed = dra.parse(LEGACY)
    assert (parsed.format, parsed.valid, parsed.variant) == ("legacy", True, "1.27-1.28")
    assert parsed.stored_checksum == parsed.computed_checksum == 153446146
    assert parsed.legacy_entries[0].cdi_devices == {"test-driver.cdi.k8s.io": ["example.com/example=cdi-example"]}
    assert [m for m in range(26, 33) if parsed.readable_by(m)] == [27, 28, 29, 30]
    assert dra.encode_legacy(parsed.legacy_entries) == LEGACY


def test_legacy_with_wrong_checksum_lists_each_layout():
    parsed = dra.parse(LEGACY.replace(b"153446146", b"1"))
    assert not parsed.valid
    assert "1.27-1.28: 153446146" in parsed.reason
    assert not any(parsed.readable_by(m) for m in range(26, 36))


@pytest.mark.parametrize(
    "vector", [v for v in GO if v["kind"] == "dra_old"], ids=[v["name"] for v in GO if v["kind"] == "dra_old"]
)
def test_go_legacy_vectors_each_layout(vector):
    parsed = dra.parse(vector["file"].encode())
    got = dict(parsed.candidates)
    assert got["1.27-1.28"] == vector["old"]["computed"]
    assert got["1.29 with ResourceHandles (reconstructed layout)"] == vector["new"]["computed"]
    assert got["1.29-1.30 fallback without ResourceHandles"] == vector["old_fallback"]["computed"]
    assert parsed.valid == any(vector[k]["ok"] for k in ("old", "new", "old_fallback"))


@pytest.mark.parametrize("name", ["old_upstream", "old_multi", "old_empty"])
def test_go_legacy_files_reencode_byte_for_byte(name):
    data = next(v for v in GO if v["name"] == name)["file"].encode()
    assert dra.encode_legacy(dra.parse(data).legacy_entries) == data


@pytest.mark.parametrize(
    "vector", [v for v in GO if v["kind"] == "dra_new"], ids=[v["name"] for v in GO if v["kind"] == "dra_new"]
)
def test_go_v1_vectors(vector):
    go = vector["new"]
    data = vector["file"].encode()
    parsed = dra.parse(data)
    assert parsed.valid == go["ok"]
    if go.get("error", "").startswith("json:"):
        assert parsed.reason == go["error"]
    else:
        assert (parsed.stored_checksum, parsed.computed_checksum) == (go["stored"], go["computed"])
    if vector["name"].startswith(("new_nil", "new_empty", "new_share")):
        assert dra.encode(parsed.state, share_id_field="share" in vector["name"]) == data


def test_empty_kubelet_state_is_null_entries():
    assert dra.EMPTY_DATA == (
        '{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1","ClaimInfoStateList":null}'
    )
    assert dra.parse(b"{}").valid  # nothing overrides NewCheckpoint(nil), which is self-consistent
