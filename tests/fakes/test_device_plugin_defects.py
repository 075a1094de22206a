"""The fake device plugin's defective-vendor modes, its CDI spec, and the Allocate log the suites check
the kubelet's contract against (one Allocate call per container, exactly the requested IDs)."""

import json

import pytest
from device_conformance.fixtures.device_plugins import allocations

from device_conformance.fakes.device_plugin import (
    RESPONSE_FIELDS,
    AllocateConfig,
    DeviceSpecConfig,
    MountConfig,
    cdi_env,
)
from device_conformance.fakes.device_plugin.allocate import container_response

RESOURCE = "example.com/dev"
EVERY_FIELD = AllocateConfig(
    envs={"DEVICES": "{ids}"},
    mounts=[MountConfig("/info/{id}", "/tmp/{id}", read_only=True)],
    devices=[DeviceSpecConfig("/dev/dc-{id}", "/dev/null")],
    annotations={"example.com/devices": "{ids}"},
    cdi_devices=["{resource}={id}"],
)


def _fields(response):
    return {
        "envs": dict(response.envs),
        "mounts": [m.container_path for m in response.mounts],
        "devices": [d.container_path for d in response.devices],
        "annotations": dict(response.annotations),
        "cdi_devices": [c.name for c in response.cdi_devices],
    }


def test_a_correct_plugin_answers_every_configured_field():
    assert _fields(container_response(EVERY_FIELD, ["dev-1"], RESOURCE)) == {
        "envs": {"DEVICES": "dev-1"},
        "mounts": ["/info/dev-1"],
        "devices": ["/dev/dc-dev-1"],
        "annotations": {"example.com/devices": "dev-1"},
        "cdi_devices": ["example.com/dev=dev-1"],
    }


@pytest.mark.parametrize("dropped", RESPONSE_FIELDS)
def test_drop_leaves_out_exactly_that_field(dropped):
    config = AllocateConfig(**{**EVERY_FIELD.__dict__, "drop": [dropped]})
    fields = _fields(container_response(config, ["dev-1"], RESOURCE))
    assert not fields.pop(dropped)
    assert all(fields.values()), fields


def test_ids_override_hands_the_container_other_devices_than_allocated():
    config = AllocateConfig(envs={"DEVICES": "{ids}"}, cdi_devices=["{resource}={id}"], ids_override=["dev-9"])
    response = container_response(config, ["dev-1"], RESOURCE)
    assert dict(response.envs) == {"DEVICES": "dev-9"}
    assert [c.name for c in response.cdi_devices] == ["example.com/dev=dev-9"]


def test_an_unknown_field_to_drop_is_refused():
    with pytest.raises(ValueError, match="unknown response fields"):
        AllocateConfig(drop=["envz"])


def test_defects_travel_to_the_plugin_process_and_bend_its_answers(kubelet_stub, start_plugin):
    start_plugin(allocate=AllocateConfig(envs={"DEVICES": "{ids}"}, annotations={"a": "b"}, drop=["annotations"]))
    response = kubelet_stub.endpoint(RESOURCE).allocate(["dev-2"])
    assert dict(response.envs) == {"DEVICES": "dev-2"} and dict(response.annotations) == {}


def test_the_plugin_writes_a_cdi_spec_for_its_devices_while_it_runs(kubelet_stub, start_plugin, tmp_path):
    cdi_dir = tmp_path / "cdi"
    handle = start_plugin(cdi_dir=str(cdi_dir))
    spec = json.loads((cdi_dir / "fake.json").read_text())
    assert spec["kind"] == RESOURCE
    assert spec["devices"] == [
        {"name": "dev-1", "containerEdits": {"env": [cdi_env("dev-1")]}},
        {"name": "dev-2", "containerEdits": {"env": [cdi_env("dev-2")]}},
    ]
    assert cdi_env("dev-1") == "DC_CDI_DEV_1=dev-1"
    assert [p.name for p in cdi_dir.iterdir()] == ["fake.json"]  # no temporary file left
    handle.stop()
    assert not (cdi_dir / "fake.json").exists()


def test_allocations_returns_the_ids_of_one_call_per_container(kubelet_stub, start_plugin):
    handle = start_plugin()
    endpoint = kubelet_stub.endpoint(RESOURCE)
    endpoint.allocate(["dev-2"])
    endpoint.allocate(["dev-1", "dev-2"])
    assert handle.allocations() == [[["dev-2"]], [["dev-1", "dev-2"]]]
    assert allocations(handle, 1, 2) == [["dev-2"], ["dev-1", "dev-2"]]


def test_allocations_explains_a_missing_extra_or_wrong_sized_call(kubelet_stub, start_plugin):
    handle = start_plugin()
    with pytest.raises(AssertionError, match=r"expected 1 Allocate call\(s\).*the plugin saw 0: none"):
        allocations(handle, 1)
    assert allocations(handle) == []
    kubelet_stub.endpoint(RESOURCE).allocate(["dev-1", "dev-2"])
    with pytest.raises(AssertionError, match=r"carries container requests \[\['dev-1', 'dev-2'\]\]"):
        allocations(handle, 1)
    with pytest.raises(AssertionError, match=r"the plugin saw 1: #\d+ Allocate \(ok\)"):
        allocations(handle, 2, 1)


def test_patterns_and_defects_are_checked_by_name():
    from device_conformance.fakes.device_plugin import DevicePluginConfig

    with pytest.raises(ValueError) as raised:
        DevicePluginConfig(RESOURCE, "/tmp/dp", patterns=["list-full-then-empty"])
    assert str(raised.value) == (
        "DevicePluginConfig.patterns: unknown ['list-full-then-empty']; "
        "use some of ('list-empty-then-full', 'long-socket-name', 'device-on-two-numa-nodes', "
        "'another-resource-first', 'no-preference', 'register-without-options')"
    )
    config = DevicePluginConfig(RESOURCE, "/tmp/dp", patterns=["list-empty-then-full"], defects=["options-crash"])
    assert DevicePluginConfig.from_dict(json.loads(config.to_json())) == config


def test_allocate_refuses_handed_out_id_refuses_an_id_an_earlier_allocate_answered(kubelet_stub, start_plugin):
    import grpc

    start_plugin(defects=["allocate-refuses-handed-out-id"])
    endpoint = kubelet_stub.endpoint(RESOURCE)
    endpoint.allocate(["dev-1"])
    with pytest.raises(grpc.RpcError) as refused:
        endpoint.allocate(["dev-1"])
    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert refused.value.details() == (
        "devices ['dev-1'] are already allocated (defect allocate-refuses-handed-out-id)"
    )
    endpoint.allocate(["dev-2"])  # one never handed out is still answered


def test_ids_change_per_start_names_the_devices_after_the_process(kubelet_stub, start_plugin):
    handle = start_plugin(defects=["ids-change-per-start"])
    endpoint = kubelet_stub.endpoint(RESOURCE)
    expected = {f"dev-1-p{handle.pid}": "Healthy", f"dev-2-p{handle.pid}": "Healthy"}
    endpoint.wait_for_devices(f"renamed {sorted(expected)}", lambda devices: devices == expected)


def test_list_omits_allocated_lists_only_the_devices_never_handed_out(kubelet_stub, start_plugin):
    start_plugin(defects=["list-omits-allocated"])
    endpoint = kubelet_stub.endpoint(RESOURCE)
    endpoint.wait_for_devices("both listed", lambda devices: sorted(devices) == ["dev-1", "dev-2"])
    endpoint.allocate(["dev-1"])
    endpoint.wait_for_devices("without dev-1", lambda devices: devices == {"dev-2": "Healthy"})


def test_a_correct_plugin_answers_an_id_again_and_keeps_listing_it(kubelet_stub, start_plugin):
    handle = start_plugin()
    endpoint = kubelet_stub.endpoint(RESOURCE)
    endpoint.wait_for_devices("both listed", lambda devices: sorted(devices) == ["dev-1", "dev-2"])
    endpoint.allocate(["dev-1"])
    endpoint.allocate(["dev-1"])
    assert endpoint.devices == {"dev-1": "Healthy", "dev-2": "Healthy"}
    assert len(handle.calls("ListAndWatch")) == 1


def test_as_subject_configures_the_fake_from_flags(tmp_path):
    from device_conformance.fakes.device_plugin.as_subject import config_from

    config = config_from(
        ["--socket-dir", "/dp", "--resource", RESOURCE, "--defect", "ids-change-per-start", "--no-reregister"],
        tmp_path,
    )
    assert (config.socket_dir, config.resource_name, [d.id for d in config.devices]) == (
        "/dp",
        RESOURCE,
        ["dev-0", "dev-1"],
    )
    assert (config.defects, config.auto_reregister, config.control_socket) == (
        ["ids-change-per-start"],
        False,
        str(tmp_path / "ctl.sock"),
    )
    assert config.allocate.envs == {"DC_DEVICES": "{ids}"}
