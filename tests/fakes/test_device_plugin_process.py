"""The fake plugin as a process: serving on and off, the call log (also after SIGKILL), clean SIGTERM,
and control-channel errors that say what went wrong."""

import itertools
import os
import signal

import grpc
import pytest

from device_conformance.core.errors import ConformanceError, WaitTimeout
from device_conformance.fakes.common.calls import REGISTER, RPC, STREAM_SEND
from device_conformance.fakes.common.control import ControlError
from device_conformance.fakes.common.sockets import SUN_PATH_MAX

RESOURCE = "example.com/dev"


def test_stop_serving_closes_the_socket_and_start_serving_brings_it_back(kubelet_stub, start_plugin):
    plugin = start_plugin()
    ep = kubelet_stub.endpoint(RESOURCE)
    ep.wait_for_devices("listed", lambda d: len(d) == 2)

    plugin.stop_serving()

    assert not os.path.exists(plugin.config.socket_path())
    assert ep.wait_for_stream_end() == "error"
    assert plugin.status()["serving"] == []
    plugin.start_serving()
    assert plugin.register().ok
    kubelet_stub.endpoint(RESOURCE).wait_for_devices("listed again", lambda d: len(d) == 2)


def test_call_log_is_ordered_and_written_by_the_plugin_process(kubelet_stub, start_plugin):
    plugin = start_plugin()
    ep = kubelet_stub.endpoint(RESOURCE)
    ep.wait_for_devices("listed", lambda d: len(d) == 2)
    ep.allocate(["dev-1"])
    plugin.set_health("dev-2", healthy=False)
    ep.wait_for_devices("dev-2 unhealthy", lambda d: d["dev-2"] == "Unhealthy")

    records = plugin.calls(kind=None)

    assert [(r.kind, r.method) for r in records] == [
        (REGISTER, "Register"),
        (RPC, "GetDevicePluginOptions"),
        (RPC, "ListAndWatch"),
        (STREAM_SEND, "ListAndWatch"),
        (RPC, "Allocate"),
        (STREAM_SEND, "ListAndWatch"),
    ]
    assert [r.seq for r in records] == [1, 2, 3, 4, 5, 6]
    assert all(a.started_mono <= b.started_mono for a, b in itertools.pairwise(records))
    assert {r.pid for r in records} == {plugin.pid}
    assert all(r.done and r.ok for r in records if r.method != "ListAndWatch" or r.kind == STREAM_SEND)


def test_sigkill_leaves_the_call_log_readable(kubelet_stub, start_plugin):
    plugin = start_plugin()
    kubelet_stub.endpoint(RESOURCE).allocate(["dev-2"])

    plugin.kill()

    assert not plugin.is_running()
    allocate = plugin.calls("Allocate")
    assert allocate[0].request == {"container_requests": [{"devices_ids": ["dev-2"]}]}
    [stream] = plugin.calls("ListAndWatch", kind=RPC)
    assert not stream.done  # it was still streaming when the process died
    assert os.path.exists(plugin.config.socket_path())  # a crash leaves the socket behind
    with pytest.raises(ControlError, match="exited with code -9"):
        plugin.status()
    plugin.cleanup()
    assert not os.path.exists(plugin.config.socket_path())


def test_respawn_after_a_crash_registers_again_and_continues_the_call_log(kubelet_stub, start_plugin):
    plugin = start_plugin()
    kubelet_stub.endpoint(RESOURCE).wait_for_devices("listed", lambda d: len(d) == 2)
    first_pid = plugin.pid
    plugin.kill()

    plugin.respawn()

    assert plugin.pid != first_pid
    kubelet_stub.wait_for_registration(2)
    # Register, options, stream, one send in the first process; the file goes on with the second one's.
    assert [(r.seq, r.pid, r.ok) for r in plugin.registrations()] == [(1, first_pid, True), (5, plugin.pid, True)]
    assert [(r.seq, r.method, r.pid) for r in plugin.calls(kind=REGISTER)] == [
        (1, "Register", first_pid),
        (5, "Register", plugin.pid),
    ]


def test_sigterm_exits_cleanly_and_removes_the_sockets(kubelet_stub, start_plugin):
    plugin = start_plugin()
    ep = kubelet_stub.endpoint(RESOURCE)

    assert plugin.stop() == 0

    assert not os.path.exists(plugin.config.socket_path())
    assert not os.path.exists(plugin.config.control_socket)
    assert ep.wait_for_stream_end() == "error"


def test_control_errors_name_the_problem_and_the_plugin_keeps_running(kubelet_stub, start_plugin):
    plugin = start_plugin()

    with pytest.raises(ControlError, match="no device 'dev-7'"):
        plugin.set_health("dev-7", healthy=False)
    with pytest.raises(ControlError, match="unknown DevicePlugin method 'Alocate'"):
        plugin.fail("Alocate", "INTERNAL", "typo")
    with pytest.raises(ControlError, match="unknown gRPC status code 'BROKEN'"):
        plugin.fail("Allocate", "BROKEN", "typo")

    assert plugin.status()["faults"] == {"faults": [], "blocked_calls": []}


def test_wait_for_call_timeout_says_what_it_awaited_and_saw(kubelet_stub, start_plugin):
    plugin = start_plugin()

    with pytest.raises(WaitTimeout) as timeout:
        plugin.wait_for_call("PreStartContainer", timeout=0.3)

    message = str(timeout.value)
    assert "1 PreStartContainer call(s)" in message
    assert "0 matching PreStartContainer call(s); latest calls: #2 GetDevicePluginOptions (ok)" in message


def test_a_long_workdir_gets_a_short_control_socket(kubelet_stub, start_plugin, tmp_path):
    workdir = tmp_path / ("w" * 100)

    plugin = start_plugin(workdir=workdir)

    assert len(plugin.control_socket) <= SUN_PATH_MAX
    assert plugin.registrations()[0].ok
    assert (workdir / "fake.calls.jsonl").exists()
    short_dir = os.path.dirname(plugin.control_socket)
    plugin.cleanup()
    assert not os.path.exists(short_dir)


def test_start_fails_fast_with_the_log_when_the_process_dies(plugin_dirs, start_plugin):
    with pytest.raises(ConformanceError, match=r"exited with code 1 before it was ready(.|\n)*Traceback"):
        start_plugin(socket_dir=str(plugin_dirs / "missing"))


def test_a_crash_fault_kills_the_plugin_in_the_middle_of_the_call(kubelet_stub, start_plugin):
    plugin = start_plugin()
    ep = kubelet_stub.endpoint(RESOURCE)
    pid = plugin.pid
    plugin.crash("Allocate")

    with pytest.raises(grpc.RpcError) as failed:
        ep.allocate(["dev-1"])

    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert plugin.stop() == -signal.SIGKILL
    [allocate] = plugin.calls("Allocate")
    assert (allocate.done, allocate.pid) == (False, pid)  # the log shows it in flight when the process died
