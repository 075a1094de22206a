"""kubelet_internal_checkpoint: reference vectors of both formats, Go-generated vectors, forging, AllocResp."""

import base64
import json
import re
from pathlib import Path

import pytest

from device_conformance.kubelet_state import allocresp
from device_conformance.kubelet_state import devicemanager as dm

VECTORS = json.loads((Path(__file__).parent / "vectors" / "devicemanager_go_vectors.json").read_text())
GO = VECTORS["devicemanager"]

# Reference checkpoints of both formats: (name, format, checksum, file)
REFERENCE_CHECKPOINTS = [
    (
        "v2_basic",
        "v2",
        159268835,
        '{"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr","ResourceName":"example.com/dev",'
        '"DeviceIDs":{"0":["dev0","dev1"]},"AllocResp":"CgYKAUsSAVY="}],"RegisteredDevices":{"example.com/dev":'
        '["dev0","dev1","dev2"]}},"Checksum":159268835}',
    ),
    (
        "v2_no_topology_nil_allocresp",
        "v2",
        713988373,
        '{"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-2","ContainerName":"c","ResourceName":"example.com/dev",'
        '"DeviceIDs":{"-1":["a"]},"AllocResp":null}],"RegisteredDevices":{"example.com/dev":["a"]}},'
        '"Checksum":713988373}',
    ),
    (
        "v2_empty_nonnil",
        "v2",
        2932075448,
        '{"Data":{"PodDeviceEntries":[],"RegisteredDevices":{}},"Checksum":2932075448}',
    ),
    (
        "v2_empty_nil",
        "v2",
        1944006890,
        '{"Data":{"PodDeviceEntries":null,"RegisteredDevices":null},"Checksum":1944006890}',
    ),
    (
        "v1_basic",
        "v1",
        2335719331,
        '{"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr","ResourceName":"example.com/dev",'
        '"DeviceIDs":["dev0","dev1"],"AllocResp":"CgYKAUsSAVY="}],"RegisteredDevices":{"example.com/dev":'
        '["dev0","dev1","dev2"]}},"Checksum":2335719331}',
    ),
    ("v1_empty", "v1", 2932075448, '{"Data":{"PodDeviceEntries":[],"RegisteredDevices":{}},"Checksum":2932075448}'),
]
V2_BASIC = REFERENCE_CHECKPOINTS[0][3].encode()
V1_BASIC = REFERENCE_CHECKPOINTS[4][3].encode()


def _bytes(vector: dict) -> bytes:
    return vector["file"].encode() if "file" in vector else base64.b64decode(vector["file_b64"])


@pytest.mark.parametrize(
    ("name", "fmt", "checksum", "text"), REFERENCE_CHECKPOINTS, ids=[v[0] for v in REFERENCE_CHECKPOINTS]
)
def test_api_facts_5_7_vectors_verify_and_reencode_byte_for_byte(name, fmt, checksum, text):
    parsed = dm.parse(text.encode())
    assert parsed.valid, parsed.reason
    assert parsed.stored_checksum == parsed.computed_checksum == checksum
    # empty data hashes the same in both formats; the V2 reader gets it first
    assert parsed.format == ("v2" if name == "v1_empty" else fmt)
    assert dm.encode(parsed.checkpoint, fmt) == text.encode()


def test_v1_hash_uses_the_1_19_type_names():
    cp = dm.parse(V1_BASIC).checkpoint
    assert dm.hashed_string(cp, "v1") == (
        "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:(string)pod-uid-1 "
        "ContainerName:(string)ctr ResourceName:(string)example.com/dev DeviceIDs:([]string)[dev0 dev1] "
        "AllocResp:([]uint8)[10 6 10 1 75 18 1 86]}] RegisteredDevices:(map[string][]string)"
        "map[example.com/dev:[dev0 dev1 dev2]]}"
    )


@pytest.mark.parametrize("vector", GO, ids=[v["name"] for v in GO])
@pytest.mark.parametrize("fmt", ["v2", "v1"])
def test_go_vectors_each_reader(vector, fmt):
    """What the kubelet's V2 and V1 readers compute for each Go-generated file."""
    go = vector[fmt]
    reading = dm._read(_bytes(vector), fmt)
    if go.get("error"):
        if go["error"].startswith(("invalid character", "unexpected end")):
            assert reading.error is not None and reading.error.startswith("invalid JSON")
        else:
            assert reading.error == go["error"]
        assert not reading.ok
        return
    assert reading.error is None
    assert reading.hashed == go["spew"]
    assert (reading.computed, reading.stored, reading.ok) == (go["computed"], go["stored"], go["ok"])


@pytest.mark.parametrize(
    "vector",
    [v for v in GO if v["kind"].startswith("write")],
    ids=[v["name"] for v in GO if v["kind"].startswith("write")],
)
def test_go_written_files_reencode_byte_for_byte(vector):
    data = _bytes(vector)
    fmt = vector["kind"].removeprefix("write_")
    parsed = dm.parse(data)
    assert parsed.valid and parsed.format in (fmt, "v2")  # empty V1 data is also valid V2
    assert dm.encode(parsed.checkpoint, fmt) == data


def test_readers_by_kubelet_version():
    v1, v2 = dm.parse(V1_BASIC), dm.parse(V2_BASIC)
    empty = dm.parse(REFERENCE_CHECKPOINTS[2][3].encode())
    assert [m for m in range(11, 36) if v1.readable_by(m)] == [*range(11, 20), *range(23, 30)]
    assert [m for m in range(11, 36) if v2.readable_by(m)] == list(range(20, 36))
    assert all(empty.readable_by(m) for m in range(11, 36))


def test_v1_file_is_detected_and_converted_to_numa_zero():
    parsed = dm.parse(V1_BASIC)
    assert (parsed.format, parsed.v1_ok, parsed.v2_ok, parsed.label) == ("v1", True, False, "v1 (pre-1.20)")
    entry = parsed.checkpoint.entries[0]
    assert entry.device_ids == ["dev0", "dev1"]
    assert entry.as_v2().device_ids == {0: ["dev0", "dev1"]}


def test_wrong_and_zero_checksums_are_rejected():
    for stored in (159268836, 0):  # no "accept zero" rule in the device manager
        parsed = dm.parse(dm.with_checksum(V2_BASIC, stored))
        assert not parsed.valid
        assert (parsed.format, parsed.stored_checksum, parsed.computed_checksum) == ("v2", stored, 159268835)
        assert parsed.reason.startswith("checksum mismatch")


def test_v1_shaped_file_with_bad_checksum_is_reported_as_v1():
    parsed = dm.parse(dm.with_checksum(V1_BASIC, 1))
    assert (parsed.format, parsed.valid, parsed.computed_checksum) == ("v1", False, 2335719331)


@pytest.mark.parametrize("kind", ["checksum", "truncate", "not-json", "empty"])
def test_corrupt_copies_are_rejected(kind):
    broken = dm.corrupt(V2_BASIC, kind)
    assert broken != V2_BASIC
    parsed = dm.parse(broken)
    assert not parsed.valid and not parsed.readable_by(30) and not parsed.readable_by(25)
    assert parsed.reason


def test_with_checksum_changes_only_the_number():
    out = dm.with_checksum(V2_BASIC, 42)
    assert out == V2_BASIC.replace(b'"Checksum":159268835', b'"Checksum":42')


def test_boot_id_is_outside_the_checksum_and_omitted_when_empty():
    cp = dm.parse(V2_BASIC).checkpoint
    cp.boot_id = "b-1"
    data = dm.encode_v2(cp)
    assert data.endswith(b',"Checksum":159268835,"BootID":"b-1"}')
    parsed = dm.parse(data)
    assert parsed.valid and parsed.checkpoint.boot_id == "b-1"
    with pytest.raises(ValueError, match="BootID"):
        dm.encode_v1(cp)


def test_encoders_refuse_the_other_formats_device_ids():
    v1_entry = dm.PodDevicesEntry("p", "c", "r", ["a"])
    with pytest.raises(ValueError, match="flat DeviceIDs list is V1"):
        dm.encode_v2(dm.Checkpoint([v1_entry], {}))
    with pytest.raises(ValueError, match="per-NUMA DeviceIDs map is V2"):
        dm.encode_v1(dm.Checkpoint([v1_entry.as_v2()], {}))
    assert dm.PodDevicesEntry("p", "c", "r", {1: ["b"], -1: ["n"], 0: ["a"]}).as_v1().device_ids == ["n", "a", "b"]


def test_forged_checkpoint_round_trips():
    alloc = allocresp.encode_alloc_resp(allocresp.ContainerAllocateResponse(envs={"GPU": "0"}))
    cp = dm.Checkpoint(
        [dm.PodDevicesEntry("uid", "main", "example.com/gpu", {dm.NO_TOPOLOGY: ["g0"], 1: ["g1"]}, alloc)],
        {"example.com/gpu": ["g0", "g1"]},
    )
    data = dm.encode_v2(cp)
    assert b'"DeviceIDs":{"-1":["g0"],"1":["g1"]}' in data
    parsed = dm.parse(data)
    assert parsed.valid and parsed.checkpoint == cp
    bad = dm.encode_v2(cp, checksum=dm.compute_checksum(cp) ^ 1)
    assert not dm.parse(bad).valid


def test_alloc_resp_of_the_facts_vector_decodes_to_env_k_v():
    resp = allocresp.decode_alloc_resp(base64.b64decode("CgYKAUsSAVY="))
    assert resp == allocresp.ContainerAllocateResponse(envs={"K": "V"})
    assert allocresp.encode_alloc_resp(resp) == bytes.fromhex("0a060a014b120156")
    assert (
        allocresp.decode_alloc_resp(None) == allocresp.decode_alloc_resp(b"") == allocresp.ContainerAllocateResponse()
    )


def test_alloc_resp_all_fields_round_trip():
    vector = next(v for v in GO if v["name"] == "w2_rich_allocresp_multi_pod")
    raw = dm.parse(_bytes(vector)).checkpoint.entries[0].alloc_resp
    resp = allocresp.decode_alloc_resp(raw)
    assert resp.envs == {"A": "1", "B": "2"}
    assert resp.mounts == [allocresp.Mount("/dev/x", "/host/x", True)]
    assert resp.devices == [allocresp.DeviceSpec("/dev/d", "/dev/d", "rw")]
    assert resp.annotations == {"a": "b"}
    assert resp.cdi_devices == ["vendor.com/gpu=g0"]
    assert allocresp.encode_alloc_resp(resp) == raw


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x0a\x10\x0a", "corrupt"),  # a length past the end
        (b"\x0b", "corrupt"),  # a group that never ends
        (b"\x0a\x02\x0a\x80", "corrupt"),  # a truncated varint
        (b"\x2a\x03\x0a\x01\xff", "UTF-8"),
        # A DeviceSpec.host_path that is not UTF-8, then one that is: the first already fails.
        (bytes.fromhex("1a0c0a02c3a91201e31203613d62"), "UTF-8"),
    ],
)
def test_undecodable_alloc_resp_raises(raw, message):
    with pytest.raises(allocresp.ProtoError, match=f"ContainerAllocateResponse.*{message}"):
        allocresp.decode_alloc_resp(raw)


def _recorded_alloc_resps():
    """Every AllocResp of the recorded checkpoints (the Go vectors, the reference files above) that is base64 as
    encoding/json reads it; the vectors of bad base64 are the JSON readers' tests."""
    files = [_bytes(v) for v in GO] + [text.encode() for *_, text in REFERENCE_CHECKPOINTS]
    found = {}
    for data in files:
        for match in re.finditer(
            rb'"AllocResp":"((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)"', data
        ):
            found[match.group(1).decode()] = base64.b64decode(match.group(1))
    return found


def test_every_recorded_alloc_resp_reencodes_byte_for_byte():
    recorded = _recorded_alloc_resps()
    decoded = {}
    for name, raw in recorded.items():
        try:
            decoded[name] = allocresp.decode_alloc_resp(raw)
        except allocresp.ProtoError:
            continue
        assert allocresp.encode_alloc_resp(decoded[name]) == raw, name
    # Two vectors hold bytes that are no protobuf (AQI=, AP+ACg==: field number 0); the rest decode.
    assert len(decoded) >= 3 and set(recorded) - set(decoded) == {"AQI=", "AP+ACg=="}


def test_alloc_resp_reads_as_the_1_34_kubelet_does():
    """What proto.Unmarshal (google.golang.org/protobuf, k8s.io/kubelet v0.37.1) gave for these bytes."""
    # Mounts then a varint where Devices (3) is a message: kept as an unknown field, not an error.
    raw = bytes.fromhex("12090a03415f421202c3a9180122070a001203415f42")
    assert allocresp.decode_alloc_resp(raw) == allocresp.ContainerAllocateResponse(
        mounts=[allocresp.Mount("A_B", "é")], annotations={"": "A_B"}
    )
    assert allocresp.decode_alloc_resp(bytes.fromhex("0b0c")) == allocresp.ContainerAllocateResponse()


def test_alloc_resp_round_trips_keys_that_prefix_each_other():
    resp = allocresp.ContainerAllocateResponse(
        envs={"GPU": "0", "GPU_IDS": "1", "": ""}, annotations={"a": "", "a=b": "2"}
    )
    raw = allocresp.encode_alloc_resp(resp)
    assert allocresp.decode_alloc_resp(raw) == resp
    assert allocresp.encode_alloc_resp(allocresp.decode_alloc_resp(raw)) == raw


def test_alloc_resp_skips_unknown_fields():
    raw = bytes.fromhex("0a060a014b120156") + b"\x78\x05" + b"\x81\x01" + bytes(8)  # field 15 varint, 16 fixed64
    assert allocresp.decode_alloc_resp(raw).envs == {"K": "V"}


def test_a_device_on_two_numa_nodes_is_one_device():
    """The kubelet records a device under each NUMA node of its topology (manager.go allocDevicesWithNUMA)."""
    from device_conformance.kubelet_state.devicemanager import PodDevicesEntry

    entry = PodDevicesEntry("uid", "main", "example.com/dev", {1: ["dev-0", "dev-2"], 0: ["dev-0", "dev-1"]})
    assert entry.devices() == ["dev-0", "dev-1", "dev-2"]
    assert entry.as_v1().device_ids == ["dev-0", "dev-1", "dev-2"]
