"""The CDI spec checks (certify/cdi.py): a valid spec passes, each broken rule is reported on its own."""

import json

import pytest

from device_conformance.certify import cdi

VALID = {
    "cdiVersion": "0.6.0",
    "kind": "dra.example.com/device",
    "devices": [{"name": "uid-1-dev-0", "containerEdits": {"env": ["A=1"]}}],
}


def write(tmp_path, spec, name="spec.json"):
    path = tmp_path / name
    path.write_text(json.dumps(spec))
    return path


def test_a_valid_spec_has_no_problems(tmp_path):
    checked = cdi.check_spec(write(tmp_path, VALID))
    assert (checked.kind, checked.devices, checked.problems) == ("dra.example.com/device", ["uid-1-dev-0"], [])


@pytest.mark.parametrize(
    "change,problem",
    [
        ({"cdiVersion": "0.6"}, "cdiVersion '0.6' is not a released CDI version"),
        ({"kind": "dra.example.com"}, "kind 'dra.example.com' is not vendor/class"),
        ({"kind": "dra.example.com/dev.ice"}, "kind 'dra.example.com/dev.ice' is not vendor/class"),
        ({"devices": []}, "devices: a spec needs at least one device"),
        ({"devices": [{"name": "-bad", "containerEdits": {"env": ["A=1"]}}]}, "name '-bad' is not a valid"),
        ({"devices": [{"name": "d", "containerEdits": {}}]}, "device 'd': containerEdits is empty"),
        ({"devices": [{"name": "d", "containerEdits": {"env": ["NOVALUE"]}}]}, "env 'NOVALUE' is not NAME=VALUE"),
        (
            {"devices": [{"name": "d", "containerEdits": {"deviceNodes": [{"path": "dev/x"}]}}]},
            "has no absolute path",
        ),
        (
            {"devices": [{"name": "d", "containerEdits": {"env": ["A=1"]}}] * 2},
            "devices[1]: name 'd' appears twice",
        ),
    ],
)
def test_each_broken_rule_is_reported(tmp_path, change, problem):
    checked = cdi.check_spec(write(tmp_path, {**VALID, **change}))
    assert len(checked.problems) == 1 and problem in checked.problems[0], checked.problems


def test_a_device_resolves_once_twice_or_not_at_all(tmp_path):
    name = "dra.example.com/device=uid-1-dev-0"
    write(tmp_path, VALID, "a.json")
    assert cdi.resolve(tmp_path, name) == [tmp_path / "a.json"]
    write(tmp_path, VALID, "b.yaml")  # JSON is YAML; the runtime reads both suffixes
    assert cdi.resolve(tmp_path, name) == [tmp_path / "a.json", tmp_path / "b.yaml"]
    write(tmp_path, VALID, ".hidden.json.tmp")
    assert len(cdi.resolve(tmp_path, name)) == 2
    assert cdi.resolve(tmp_path, "dra.example.com/device=other") == []


def test_qualified_names():
    assert cdi.parse_qualified("vendor.com/gpu=gpu-0") == ("vendor.com/gpu", "gpu-0")
    assert cdi.parse_qualified("gpu-0") is None
    assert cdi.parse_qualified("vendor.com=gpu-0") is None
