"""`device-conformance checkpoint verify|show|forge`, end to end through cli.main."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from device_conformance.cli.main import main
from device_conformance.kubelet_state import devicemanager as dm
from device_conformance.kubelet_state import dra

V2 = (
    b'{"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr","ResourceName":"example.com/dev",'
    b'"DeviceIDs":{"0":["dev0","dev1"]},"AllocResp":"CgYKAUsSAVY="}],"RegisteredDevices":{"example.com/dev":'
    b'["dev0","dev1","dev2"]}},"Checksum":159268835}'
)
V1 = (
    b'{"Data":{"PodDeviceEntries":[{"PodUID":"pod-uid-1","ContainerName":"ctr","ResourceName":"example.com/dev",'
    b'"DeviceIDs":["dev0","dev1"],"AllocResp":"CgYKAUsSAVY="}],"RegisteredDevices":{"example.com/dev":'
    b'["dev0","dev1","dev2"]}},"Checksum":2335719331}'
)
DRA_STATE = dra.DRAState(
    [
        dra.ClaimInfoState(
            "uid-1",
            "claim-1",
            "ns",
            ["pod-1"],
            {"gpu.example.com": [dra.Device("pool", "gpu-0", ["req"], ["gpu.example.com/gpu=gpu-0"])]},
        )
    ]
)


def _file(tmp_path: Path, data: bytes, name: str = dm.FILE_NAME) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_verify_accepts_a_good_v2_file(tmp_path, capsys):
    assert main(["checkpoint", "verify", _file(tmp_path, V2)]) == 0
    out = capsys.readouterr().out
    for line in ("format: v2 (1.20+)", "stored checksum: 159268835", "computed checksum: 159268835", "checksum: OK"):
        assert line in out.splitlines()


def test_verify_reports_a_mismatch(tmp_path, capsys):
    path = _file(tmp_path, dm.with_checksum(V2, 7))
    assert main(["checkpoint", "verify", path]) == 1
    out = capsys.readouterr().out
    assert "checksum MISMATCH: stored 7 != computed 159268835" in out
    assert "checksum: OK" not in out


def test_verify_v1_depends_on_kubelet_version(tmp_path, capsys):
    path = _file(tmp_path, V1)
    assert main(["checkpoint", "verify", path]) == 0
    assert "format: v1 (pre-1.20)" in capsys.readouterr().out
    assert main(["checkpoint", "verify", path, "--kubelet-version", "1.30"]) == 1
    assert "kubelet 1.30: rejects this file" in capsys.readouterr().out
    assert main(["checkpoint", "verify", path, "--kubelet-version", "v1.25.3"]) == 0


def test_verify_type_error_is_rejected(tmp_path, capsys):
    path = _file(tmp_path, b'{"Data":{"PodDeviceEntries":[{"DeviceIDs":{"x":["a"]}}]},"Checksum":1}')
    assert main(["checkpoint", "verify", path]) == 1
    assert "REJECTED: json: cannot unmarshal number x into Go struct field" in capsys.readouterr().out


def test_verify_dra_files_detected_from_content(tmp_path, capsys):
    good = _file(tmp_path, dra.encode(DRA_STATE), "state.json")
    assert main(["checkpoint", "verify", good]) == 0
    out = capsys.readouterr().out
    assert "format: dra v1 (1.31+, CRC-32 of Data)" in out and "checksum: OK" in out
    bad = _file(tmp_path, dra.encode(DRA_STATE, checksum=5), "bad.json")
    assert main(["checkpoint", "verify", bad]) == 1
    assert "checksum MISMATCH: stored 5" in capsys.readouterr().out
    legacy = _file(tmp_path, dra.encode_legacy([dra.LegacyClaimInfoState("d", claim_uid="u")]), "legacy.json")
    assert main(["checkpoint", "verify", legacy, "--kubelet-version", "1.28"]) == 0
    assert "layout: 1.27-1.28" in capsys.readouterr().out
    assert main(["checkpoint", "verify", legacy, "--kubelet-version", "1.31"]) == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such file"),
        (b"", "the file is empty"),
        (b'{"Data":{"PodDe', "invalid JSON"),
        (b'{"hello":1}', "not a recognisable checkpoint"),
        (b"[1,2]", "top level is not a JSON object"),
    ],
)
def test_bad_input_is_a_clear_error_with_a_fix(tmp_path, capsys, content, message):
    path = tmp_path / "some-file"
    if content is not None:
        path.write_bytes(content)
    assert main(["checkpoint", "verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "fix:" in err


def test_show_text_lists_entries_and_decoded_alloc_resp(tmp_path, capsys):
    assert main(["checkpoint", "show", _file(tmp_path, V2)]) == 0
    out = capsys.readouterr().out
    assert "pod pod-uid-1  container ctr  resource example.com/dev" in out
    assert "devices (NUMA 0): dev0 dev1" in out
    assert "env K=V" in out
    assert "example.com/dev: dev0 dev1 dev2" in out


def test_show_json_is_machine_readable(tmp_path, capsys):
    assert main(["checkpoint", "show", "--json", _file(tmp_path, V2)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["kind"], doc["format"], doc["valid"], doc["computed_checksum"]) == (
        "devicemanager",
        "v2",
        True,
        159268835,
    )
    entry = doc["entries"][0]
    assert entry["device_ids"] == {"0": ["dev0", "dev1"]}
    assert entry["alloc_resp"]["envs"] == {"K": "V"}


def test_show_flags_an_undecodable_alloc_resp(tmp_path, capsys):
    cp = dm.Checkpoint([dm.PodDevicesEntry("p", "c", "r", {0: ["a"]}, b"\x0a\x10")], {"r": ["a"]})
    assert main(["checkpoint", "show", _file(tmp_path, dm.encode_v2(cp))]) == 0
    assert "does not decode" in capsys.readouterr().out


def test_show_dra_json(tmp_path, capsys):
    assert main(["checkpoint", "show", "--json", _file(tmp_path, dra.encode(DRA_STATE), dra.FILE_NAME)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "dra" and doc["valid"]
    assert doc["claims"][0]["drivers"]["gpu.example.com"][0]["device_name"] == "gpu-0"


def test_forge_from_flags_then_verify(tmp_path, capsys):
    out = tmp_path / "forged"
    assert main(["checkpoint", "forge", "-o", str(out), "--entry", "pod-a:ctr:example.com/gpu=g0,g1@1"]) == 0
    parsed = dm.parse(out.read_bytes())
    assert parsed.valid and parsed.format == "v2"
    assert parsed.checkpoint.entries[0].device_ids == {0: ["g0"], 1: ["g1"]}
    assert parsed.checkpoint.registered_devices == {"example.com/gpu": ["g0", "g1"]}
    assert out.stat().st_mode & 0o777 == 0o600
    capsys.readouterr()
    assert main(["checkpoint", "verify", str(out)]) == 0


def test_forge_bad_checksum(tmp_path):
    out = tmp_path / "forged"
    assert main(["checkpoint", "forge", "-o", str(out), "--entry", "p:c:r=a", "--bad-checksum"]) == 0
    parsed = dm.parse(out.read_bytes())
    assert not parsed.valid and parsed.stored_checksum == (parsed.computed_checksum + 1) % 2**32
    assert main(["checkpoint", "verify", str(out)]) == 1


def test_forge_v1_from_yaml_spec(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "format: v1\nentries:\n  - pod_uid: p1\n    container: main\n    resource: example.com/dev\n"
        "    devices: [d0, d1]\n    envs: {K: V}\nregistered_devices:\n  example.com/dev: [d0, d1, d2]\n"
    )
    out = tmp_path / "v1"
    assert main(["checkpoint", "forge", "-o", str(out), "--spec", str(spec)]) == 0
    data = out.read_bytes()
    parsed = dm.parse(data)
    assert (parsed.format, parsed.valid) == ("v1", True)
    assert b'"DeviceIDs":["d0","d1"],"AllocResp":"CgYKAUsSAVY="' in data


def test_forge_dra_from_spec(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(
        json.dumps(
            {
                "kind": "dra",
                "claims": [
                    {
                        "claim_uid": "u",
                        "claim_name": "c",
                        "namespace": "ns",
                        "pod_uids": ["p"],
                        "drivers": {"d.example": [{"pool": "p", "device": "x"}]},
                    }
                ],
            }
        )
    )
    out = tmp_path / dra.FILE_NAME
    assert main(["checkpoint", "forge", "-o", str(out), "--spec", str(spec)]) == 0
    parsed = dra.parse(out.read_bytes())
    assert parsed.valid and parsed.state.entries[0].drivers == {"d.example": [dra.Device("p", "x")]}


def test_forge_rejects_a_malformed_entry(tmp_path, capsys):
    assert main(["checkpoint", "forge", "-o", str(tmp_path / "x"), "--entry", "no-colons"]) == 2
    assert "POD:CONTAINER:RESOURCE" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_console_script_verify(tmp_path):
    exe = Path(sys.executable).with_name("device-conformance")
    path = _file(tmp_path, V2)
    done = subprocess.run([str(exe), "checkpoint", "verify", path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "format: v2 (1.20+)" in done.stdout and "checksum: OK" in done.stdout


# -- dra_health_state ----------------------------------------------------------------------------------------

HEALTH_RECORDED = Path(__file__).parents[1] / "kubelet_state" / "recorded" / "dra_health_state.v1.37.1"


def test_verify_accepts_the_recorded_health_file_and_says_it_has_no_checksum(capsys):
    assert main(["checkpoint", "verify", str(HEALTH_RECORDED)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"file: {HEALTH_RECORDED}",
        "kind: DRA health-info checkpoint (dra_health_state)",
        "format: dra health (1.36+, plain JSON, no checksum)",
        "stored checksum: -",
        "computed checksum: -",
        "checksum: none (the kubelet writes none)",
        "OK: the kubelet loads it",
    ]


def test_verify_rejects_a_health_file_the_kubelet_fails_to_load(tmp_path, capsys):
    path = _file(tmp_path, b'{"d":{"Devices":{"p/x":{"LastUpdated":"yesterday"}}}}', "dra_health_state")
    assert main(["checkpoint", "verify", path]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        'REJECTED: parsing time "yesterday" as RFC 3339 failed (LastUpdated of p/x) (the kubelet logs \'Failed to '
        "load health checkpoint'); the kubelet starts with what decoded, an empty health cache for a file that is "
        "not JSON"
    )
    assert main(["checkpoint", "verify", "--kubelet-version", "1.35", str(HEALTH_RECORDED)]) == 1


def test_show_prints_each_device_with_its_health(capsys):
    assert main(["checkpoint", "show", str(HEALTH_RECORDED)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == [
        "format: dra health (1.36+, plain JSON, no checksum)",
        "checksum: none (the kubelet writes none)",
        "kubelet: loads",
        "drivers: 1",
        "  driver dc-0c0c998c.example.com:",
        "    device dc-r5f7652/dev-0: Healthy  updated 2026-11-28T02:46:18.387156622Z  unknown after 30s",
    ]
    assert main(["checkpoint", "show", "--json", str(HEALTH_RECORDED)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["kind"], doc["valid"], doc["stored_checksum"]) == ("drahealth", True, None)
    assert doc["drivers"] == {
        "dc-0c0c998c.example.com": {
            "dc-r5f7652/dev-0": {
                "pool_name": "dc-r5f7652",
                "device_name": "dev-0",
                "health": "Healthy",
                "last_updated": "2026-11-28T02:46:18.387156622Z",
                "health_check_timeout_ns": 30000000000,
                "message": "",
            }
        }
    }


def test_an_empty_health_file_is_told_apart_by_its_name(tmp_path, capsys):
    assert main(["checkpoint", "show", _file(tmp_path, b"{}", "dra_health_state")]) == 0
    assert "kind: DRA health-info checkpoint (dra_health_state)" in capsys.readouterr().out


def test_forge_writes_the_health_file_the_kubelet_would(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "kind: drahealth\n"
        "drivers:\n"
        "  dc-0c0c998c.example.com:\n"
        "    - {pool: dc-r5f7652, device: dev-0, last_updated: '2026-11-28T02:46:18.387156622Z', timeout_seconds: 30}\n"
    )
    out = tmp_path / "dra_health_state"
    assert main(["checkpoint", "forge", "-o", str(out), "--spec", str(spec)]) == 0
    assert out.read_bytes() == HEALTH_RECORDED.read_bytes()
    assert oct(out.stat().st_mode & 0o777) == "0o600"
    assert main(["checkpoint", "forge", "-o", str(out), "--spec", str(spec), "--bad-checksum"]) == 2
    assert "dra_health_state has no checksum to get wrong" in capsys.readouterr().err
