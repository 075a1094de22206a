"""What the kubelet sees through the fake plugin's RPCs: the device list over ListAndWatch, the configured
Allocate answer, and injected failures and blocks."""

import threading

import grpc
import pytest

from device_conformance.fakes.device_plugin import (
    AllocateConfig,
    DeviceConfig,
    DeviceSpecConfig,
    MountConfig,
    OptionsConfig,
)

RESOURCE = "example.com/dev"


@pytest.fixture
def endpoint(kubelet_stub, start_plugin):
    """A plugin registered with the stub, its first device list already received."""
    plugin = start_plugin(devices=[DeviceConfig("dev-1", numa_nodes=[0]), DeviceConfig("dev-2", numa_nodes=[1])])
    ep = kubelet_stub.endpoint(RESOURCE)
    ep.wait_for_devices("both healthy", lambda d: d == {"dev-1": "Healthy", "dev-2": "Healthy"})
    return plugin, ep


def test_list_and_watch_sends_devices_with_numa_topology(endpoint):
    _, ep = endpoint

    assert [(d.ID, [n.ID for n in d.topology.nodes]) for d in ep.updates[0]] == [("dev-1", [0]), ("dev-2", [1])]


def test_health_flip_and_device_changes_each_push_the_full_list(endpoint):
    plugin, ep = endpoint

    plugin.set_health("dev-1", healthy=False)
    ep.wait_for_devices("dev-1 unhealthy", lambda d: d == {"dev-1": "Unhealthy", "dev-2": "Healthy"})
    plugin.add_device("dev-3", numa_nodes=[0])
    ep.wait_for_devices("dev-3 added", lambda d: set(d) == {"dev-1", "dev-2", "dev-3"})
    plugin.remove_device("dev-2")
    ep.wait_for_devices("dev-2 removed", lambda d: d == {"dev-1": "Unhealthy", "dev-3": "Healthy"})
    plugin.set_devices(["dev-9"])
    ep.wait_for_devices("replaced by dev-9", lambda d: d == {"dev-9": "Healthy"})

    assert len(ep.updates) == 5  # the first list plus one full list per change
    assert len(plugin.calls("ListAndWatch", kind="stream_send")) == 5


def test_end_stream_cleanly(endpoint):
    plugin, ep = endpoint

    assert plugin.end_stream() == 1

    assert ep.wait_for_stream_end() == "ended"
    [stream] = plugin.wait_for_call("ListAndWatch", done=True)
    assert stream.error is None and stream.response == {"sent": 1}


def test_end_stream_with_an_error(endpoint):
    plugin, ep = endpoint

    plugin.end_stream("device gone", code="UNAVAILABLE")

    assert ep.wait_for_stream_end() == "error"
    assert ep.stream_error == (grpc.StatusCode.UNAVAILABLE, "device gone")


def test_list_and_watch_failing_at_start_sends_nothing(kubelet_stub, start_plugin):
    plugin = start_plugin(register_on_start=False)
    plugin.fail("ListAndWatch", "INTERNAL", "no devices for you")

    assert plugin.register().ok  # registration itself succeeds; the stream fails right after
    ep = kubelet_stub.endpoint(RESOURCE)

    assert ep.wait_for_stream_end() == "error"
    assert (ep.stream_error, ep.updates) == ((grpc.StatusCode.INTERNAL, "no devices for you"), [])
    assert [c.method for c in plugin.calls()] == ["GetDevicePluginOptions", "ListAndWatch"]


def test_allocate_returns_the_configured_answer_for_the_requested_ids(kubelet_stub, start_plugin):
    allocate = AllocateConfig(
        envs={"DEVICES": "{ids}", "DEV_{index}": "{id}"},
        mounts=[MountConfig("/dev/fake/{id}", "/tmp/{id}", read_only=True)],
        devices=[DeviceSpecConfig("/dev/null-{id}", "/dev/null", "rw")],
        annotations={"example.com/count": "{count}"},
        cdi_devices=["example.com/dev={id}"],
    )
    start_plugin(allocate=allocate)

    resp = kubelet_stub.endpoint(RESOURCE).allocate(["dev-2", "dev-1"])

    assert dict(resp.envs) == {"DEVICES": "dev-2,dev-1", "DEV_0": "dev-2", "DEV_1": "dev-1"}
    assert [(m.container_path, m.host_path, m.read_only) for m in resp.mounts] == [
        ("/dev/fake/dev-2", "/tmp/dev-2", True),
        ("/dev/fake/dev-1", "/tmp/dev-1", True),
    ]
    assert [(d.container_path, d.permissions) for d in resp.devices] == [
        ("/dev/null-dev-2", "rw"),
        ("/dev/null-dev-1", "rw"),
    ]
    assert dict(resp.annotations) == {"example.com/count": "2"}
    assert [c.name for c in resp.cdi_devices] == ["example.com/dev=dev-2", "example.com/dev=dev-1"]


def test_injected_allocate_failure_reaches_the_caller_only_the_given_times(endpoint):
    plugin, ep = endpoint
    plugin.fail("Allocate", grpc.StatusCode.RESOURCE_EXHAUSTED, "out of widgets", times=1)

    with pytest.raises(grpc.RpcError) as failed:
        ep.allocate(["dev-1"])

    assert (failed.value.code(), failed.value.details()) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "out of widgets")
    assert ep.allocate(["dev-1"]).envs == {}
    first, second = plugin.calls("Allocate")
    assert first.error == {"code": "RESOURCE_EXHAUSTED", "message": "out of widgets"}
    assert second.error is None and second.request == {"container_requests": [{"devices_ids": ["dev-1"]}]}


def test_blocked_allocate_waits_until_unblocked(endpoint):
    plugin, ep = endpoint
    plugin.block("Allocate")
    answered = threading.Event()
    caller = threading.Thread(target=lambda: (ep.allocate(["dev-1"]), answered.set()))
    caller.start()

    [in_flight] = plugin.wait_for_call("Allocate")
    assert not in_flight.done and not answered.is_set()
    plugin.unblock("Allocate")
    caller.join(timeout=10)

    assert answered.is_set()
    assert plugin.wait_for_call("Allocate", done=True)[0].error is None


def test_preferred_allocation_and_pre_start_when_advertised(kubelet_stub, start_plugin):
    plugin = start_plugin(options=OptionsConfig(pre_start_required=True, get_preferred_allocation_available=True))
    ep = kubelet_stub.endpoint(RESOURCE)

    assert (ep.options.pre_start_required, ep.options.get_preferred_allocation_available) == (True, True)
    assert ep.get_preferred_allocation(["dev-1", "dev-2", "dev-3"], must_include=["dev-3"], size=2) == [
        "dev-3",
        "dev-1",
    ]
    ep.pre_start_container(["dev-1"])
    assert plugin.calls("PreStartContainer")[0].request == {"devices_ids": ["dev-1"]}


def test_preferred_order_and_failing_sizes(kubelet_stub, start_plugin):
    """preferred_order wins over the kubelet's order (after must_include); a size in preferred_fail_sizes
    ends the call with INTERNAL and logs it."""
    plugin = start_plugin(
        devices=[DeviceConfig(f"dev-{i}") for i in range(4)],
        options=OptionsConfig(get_preferred_allocation_available=True),
        preferred_order=["dev-3", "dev-9", "dev-1"],
        preferred_fail_sizes=[3],
    )
    ep = kubelet_stub.endpoint(RESOURCE)
    available = ["dev-0", "dev-1", "dev-2", "dev-3"]
    assert ep.get_preferred_allocation(available, must_include=[], size=2) == ["dev-3", "dev-1"]
    assert ep.get_preferred_allocation(available, must_include=["dev-2"], size=2) == ["dev-2", "dev-3"]
    with pytest.raises(grpc.RpcError) as failed:
        ep.get_preferred_allocation(available, must_include=[], size=3)
    assert failed.value.code() == grpc.StatusCode.INTERNAL
    last = plugin.calls("GetPreferredAllocation")[-1]
    assert last.error == {"code": "INTERNAL", "message": "fake preferred allocation failure for size 3"}
