"""go-spew %#v printing, FNV-1a and Go encoding/json semantics, against the kubelet's checkpoint checksums."""

import pytest

from device_conformance.kubelet_state.gojson import (
    GoJSONError,
    go_base64_decode,
    go_json_decode,
    go_json_encode,
    go_json_string,
    object_shape,
)
from device_conformance.kubelet_state.gospew import fnv1a_32, spew, spew_fnv
from device_conformance.kubelet_state.gotypes import (
    EMPTY_STRUCT,
    INT64,
    STRING,
    STRING_SLICE,
    UINT64,
    Bytes,
    Field,
    Map,
    Pointer,
    Scalar,
    Slice,
    Struct,
)

# The kubelet's V2 types, spelled out independently of devicemanager.py.
NUMA = Map("checkpoint.DevicesPerNUMA", INT64, STRING_SLICE)
REG = Map("map[string][]string", STRING, STRING_SLICE)
ENTRY = Struct(
    "checkpoint.PodDevicesEntry",
    (
        Field("PodUID", STRING),
        Field("ContainerName", STRING),
        Field("ResourceName", STRING),
        Field("DeviceIDs", NUMA),
        Field("AllocResp", Bytes()),
    ),
)
DATA = Struct(
    "checkpoint.checkpointData",
    (Field("PodDeviceEntries", Slice("[]checkpoint.PodDevicesEntry", ENTRY)), Field("RegisteredDevices", REG)),
)

BASIC = {
    "PodDeviceEntries": [
        {
            "PodUID": "pod-uid-1",
            "ContainerName": "ctr",
            "ResourceName": "example.com/dev",
            "DeviceIDs": {0: ["dev0", "dev1"]},
            "AllocResp": bytes([10, 6, 10, 1, 75, 18, 1, 86]),
        }
    ],
    "RegisteredDevices": {"example.com/dev": ["dev0", "dev1", "dev2"]},
}


def test_fnv1a_32_reference_values():
    assert fnv1a_32(b"") == 0x811C9DC5
    assert fnv1a_32(b"a") == 0xE40C292C
    assert fnv1a_32(b"foobar") == 0xBF9CF968


@pytest.mark.parametrize(
    ("value", "expected", "checksum"),
    [
        (
            BASIC,
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[{PodUID:(string)pod-uid-1 "
            "ContainerName:(string)ctr ResourceName:(string)example.com/dev DeviceIDs:(checkpoint.DevicesPerNUMA)"
            "map[0:[dev0 dev1]] AllocResp:([]uint8)[10 6 10 1 75 18 1 86]}] RegisteredDevices:(map[string][]string)"
            "map[example.com/dev:[dev0 dev1 dev2]]}",
            159268835,
        ),
        (
            {"PodDeviceEntries": [], "RegisteredDevices": {}},
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)[] "
            "RegisteredDevices:(map[string][]string)map[]}",
            2932075448,
        ),
        (
            {"PodDeviceEntries": None, "RegisteredDevices": None},
            "(checkpoint.checkpointData){PodDeviceEntries:([]checkpoint.PodDevicesEntry)<nil> "
            "RegisteredDevices:(map[string][]string)<nil>}",
            1944006890,
        ),
    ],
    ids=["v2_basic", "empty_nonnil", "all_null"],
)
def test_api_facts_5_4_spew_strings(value, expected, checksum):
    assert spew(DATA, value) == expected
    assert spew_fnv(DATA, value) == checksum


def test_nil_and_empty_print_differently():
    assert spew(STRING_SLICE, None) == "([]string)<nil>"
    assert spew(STRING_SLICE, []) == "([]string)[]"
    assert spew(REG, None) == "(map[string][]string)<nil>"
    assert spew(REG, {}) == "(map[string][]string)map[]"
    assert spew(Bytes(), None) == "([]uint8)<nil>"
    assert spew(Bytes(), b"") == "([]uint8)[]"
    # inside a map, a nil value has no type prefix
    assert spew(NUMA, {0: None, 1: []}) == "(checkpoint.DevicesPerNUMA)map[0:<nil> 1:[]]"


def test_map_keys_sort_numerically_and_bytewise():
    assert (
        spew(NUMA, {10: ["a"], 2: ["b"], -1: ["c"], 0: ["d"]})
        == "(checkpoint.DevicesPerNUMA)map[-1:[c] 0:[d] 2:[b] 10:[a]]"
    )
    # bytewise: upper case before lower case, multi-byte UTF-8 after ASCII
    assert (
        spew(REG, {"b": [], "a": [], "B": [], "é": [], "_": []}) == "(map[string][]string)map[B:[] _:[] a:[] b:[] é:[]]"
    )


def test_strings_are_printed_raw():
    t = Struct("p.T", (Field("S", STRING), Field("L", STRING_SLICE)))
    value = {"S": 'a "q" ]x[ {y}', "L": ["sp ace", "日本", ""]}
    assert spew(t, value) == '(p.T){S:(string)a "q" ]x[ {y} L:([]string)[sp ace 日本 ]}'


def test_pointers_print_their_type_at_top_and_in_fields_only():
    inner = Struct("v1alpha2.Handle", (Field("N", STRING),))
    outer = Struct("state.Outer", (Field("P", Pointer(inner)), Field("L", Slice("[]*v1alpha2.Handle", Pointer(inner)))))
    value = {"P": None, "L": [{"N": "x"}, None]}
    assert (
        spew(Pointer(outer), value)
        == "(*state.Outer){P:(*v1alpha2.Handle)<nil> L:([]*v1alpha2.Handle)[<*>{N:(string)x} <nil>]}"
    )
    assert spew(Pointer(inner), None) == "(*v1alpha2.Handle)<nil>"
    assert spew(Struct("a.B", (Field("P", Pointer(STRING)),)), {"P": "v"}) == "(a.B){P:(*string)v}"


def test_api_facts_6_2_legacy_dra_string():
    uid = Scalar("types.UID", "string")
    claim = Struct(
        "state.ClaimInfoState",
        (
            Field("DriverName", STRING),
            Field("ClassName", STRING),
            Field("ClaimUID", uid),
            Field("ClaimName", STRING),
            Field("Namespace", STRING),
            Field("PodUIDs", Map("sets.Set[string]", STRING, EMPTY_STRUCT)),
            Field("CDIDevices", REG),
        ),
    )
    cp = Struct(
        "state.DRAManagerCheckpoint",
        (
            Field("Version", STRING),
            Field("Entries", Slice("state.ClaimInfoStateList", claim)),
            Field("Checksum", Scalar("checksum.Checksum", "uint")),
        ),
    )
    value = {
        "Version": "v1",
        "Checksum": 0,
        "Entries": [
            {
                "DriverName": "test-driver.cdi.k8s.io",
                "ClassName": "class-name",
                "ClaimUID": "067798be-454e-4be4-9047-1aa06aea63f7",
                "ClaimName": "example",
                "Namespace": "default",
                "PodUIDs": {"139cdb46-f989-4f17-9561-ca10cfb509a6": {}},
                "CDIDevices": {"test-driver.cdi.k8s.io": ["example.com/example=cdi-example"]},
            }
        ],
    }
    expected = (
        "(*state.DRAManagerCheckpoint){Version:(string)v1 Entries:(state.ClaimInfoStateList)[{DriverName:(string)"
        "test-driver.cdi.k8s.io ClassName:(string)class-name ClaimUID:(types.UID)067798be-454e-4be4-9047-1aa06aea63f7 "
        "ClaimName:(string)example Namespace:(string)default PodUIDs:(sets.Set[string])map[139cdb46-f989-4f17-9561-"
        "ca10cfb509a6:{}] CDIDevices:(map[string][]string)map[test-driver.cdi.k8s.io:[example.com/example=cdi-example]]"
        "}] Checksum:(checksum.Checksum)0}"
    )
    assert spew(Pointer(cp), value) == expected
    assert fnv1a_32(expected.encode()) == 153446146


def test_json_decode_matches_keys_case_insensitively_with_go_folding():
    t = Struct("p.T", (Field("Checksum", UINT64), Field("ResourceName", STRING)))
    value, err = go_json_decode(t, '{"CHECKSUM":7,"re\u017fourcename":"r"}'.encode())
    assert err is None
    assert value == {"Checksum": 7, "ResourceName": "r"}
    value, _ = go_json_decode(t, '{"Chec\u212asum":9}'.encode())  # KELVIN SIGN folds to k
    assert value["Checksum"] == 9


def test_json_decode_null_is_nil_for_containers_and_a_no_op_for_scalars():
    t = Struct("p.T", (Field("S", STRING), Field("L", STRING_SLICE), Field("M", REG), Field("B", Bytes())))
    initial = {"S": "keep", "L": [], "M": {}, "B": b"x"}
    value, err = go_json_decode(t, b'{"S":null,"L":null,"M":null,"B":null}', initial)
    assert err is None
    assert value == {"S": "keep", "L": None, "M": None, "B": None}
    absent, _ = go_json_decode(t, b"{}", initial)
    assert absent == initial  # absent keys keep the pre-initialised values


def test_json_decode_merges_repeated_maps_and_reuses_slice_elements():
    t = Struct(
        "p.T", (Field("M", REG), Field("E", Slice("[]p.E", Struct("p.E", (Field("A", STRING), Field("B", STRING))))))
    )
    data = b'{"M":{"x":["1"]},"m":{"y":[]},"E":[{"A":"a","B":"b"},{"A":"a2"}],"E":[{"A":"z"}],"E":[{},{}]}'
    value, err = go_json_decode(t, data)
    assert err is None
    assert value["M"] == {"x": ["1"], "y": []}
    # Go decodes into the old backing array: element 0 keeps B, element 1 comes back stale.
    assert value["E"] == [{"A": "z", "B": "b"}, {"A": "a2", "B": ""}]


def test_json_decode_reports_the_first_type_error_like_go():
    t = Struct("checkpoint.Data", (Field("Checksum", Scalar("checksum.Checksum", "uint")), Field("N", NUMA)))
    _, err = go_json_decode(t, b'{"Checksum":-1,"N":{"x":[]}}')
    assert err == "json: cannot unmarshal number -1 into Go struct field Data.Checksum of type checksum.Checksum"
    _, err = go_json_decode(t, b'{"N":{"1.5":[]}}')
    assert err == "json: cannot unmarshal number 1.5 into Go struct field Data.N of type int64"
    _, err = go_json_decode(t, b"[]")
    assert err == "json: cannot unmarshal array into Go value of type checkpoint.Data"


@pytest.mark.parametrize("bad", [b"", b"{", b'{"a":NaN}', b"{} {}", b"\xef\xbb\xbf{}", b'{"a":"\x01"}'])
def test_json_syntax_errors_are_reported_not_raised(bad):
    value, err = go_json_decode(Struct("p.T", ()), bad)
    assert value == {}
    assert err is not None and err.startswith("invalid JSON")


def test_base64_follows_go_std_encoding():
    assert go_base64_decode("CgYKAUsSAVY=") == bytes([10, 6, 10, 1, 75, 18, 1, 86])
    assert go_base64_decode("AQ\r\nI=") == b"\x01\x02"
    assert go_base64_decode("") == b""
    for text, offset in [("AQI", 0), ("!!!!", 0), ("AQ==AQ==", 4), ("A===", 1), ("-_8=", 0)]:
        with pytest.raises(GoJSONError, match=f"illegal base64 data at input byte {offset}$"):
            go_base64_decode(text)


def test_json_encode_escapes_like_go():
    assert (
        go_json_string('a<b>&"\\\n\t\b\f\x01\x7f\u2028é')
        == '"a\\u003cb\\u003e\\u0026\\"\\\\\\n\\t\\b\\f\\u0001\x7f\\u2028é"'
    )
    t = Struct("p.T", (Field("M", NUMA), Field("B", Bytes()), Field("O", STRING, json="o", omitempty=True)))
    assert (
        go_json_encode(t, {"M": {10: [], 2: None, -1: ["x"]}, "B": b"\x00\xff", "O": ""})
        == b'{"M":{"-1":["x"],"10":[],"2":null},"B":"AP8="}'
    )


def test_object_shape_reports_top_level_kinds():
    assert object_shape(b'{"Data":"x","Checksum":1,"n":null}') == [
        ("Data", "string"),
        ("Checksum", "number"),
        ("n", "null"),
    ]
    assert object_shape(b"[1]") is None
    assert object_shape(b"{") is None
