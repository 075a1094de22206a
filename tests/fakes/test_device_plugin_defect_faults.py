"""The device plugin's defects that are faults from the start, on real plugin processes: preloaded from the config,
applied as a test's fault of the same action, and kept when a test clears its faults; and the panic action."""

import subprocess
import sys

import grpc
import pytest

from device_conformance.core.errors import ConformanceError
from device_conformance.fakes.common.control import ControlError

RESOURCE = "example.com/dev"
GO_PANIC_EXIT = 2


def test_go_panic_prints_the_panic_and_exits_2_at_once():
    code = "\n".join(
        [
            "from device_conformance.fakes.common.panic import go_panic",
            "try:",
            "    go_panic('boom')",
            "finally:",
            "    print('x')",
        ]
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr, done.stdout) == (GO_PANIC_EXIT, "panic: boom\n", "")


def test_prestart_error_fails_every_prestart_logs_it_and_outlives_clear_faults(kubelet_stub, start_plugin):
    plugin = start_plugin(defects=["prestart-error"])
    endpoint = kubelet_stub.endpoint(RESOURCE)

    for _ in range(2):
        with pytest.raises(grpc.RpcError) as failed:
            endpoint.pre_start_container(["dev-1"])
        assert (failed.value.code(), failed.value.details()) == (
            grpc.StatusCode.INTERNAL,
            "PreStartContainer failed (defect prestart-error)",
        )
        plugin.clear_faults()

    calls = plugin.calls("PreStartContainer")
    assert [c.error for c in calls] == [
        {"code": "INTERNAL", "message": "PreStartContainer failed (defect prestart-error)"}
    ] * 2
    assert [s["defect"] for s in plugin.status()["faults"]["standing"]] == ["prestart-error"]


def test_options_crash_panics_in_get_device_plugin_options_during_register(kubelet_stub, start_plugin):
    with pytest.raises(ConformanceError, match=r"exited with code 2 before it was ready") as failed:
        start_plugin(defects=["options-crash"])
    assert (
        "panic: runtime error: invalid memory address or nil pointer dereference\n\ngoroutine 1 [running]:\n"
        "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1.(*DevicePluginOptions).Marshal(0x0) (defect options-crash)"
    ) in str(failed.value)


def test_register_crash_panics_before_the_register_request_is_sent(kubelet_stub, start_plugin):
    plugin = start_plugin(defects=["register-crash"], register_on_start=False)

    with pytest.raises(ControlError):
        plugin.register()

    assert plugin.stop() == GO_PANIC_EXIT
    assert "panic: assignment to entry in nil map\n\ngoroutine 1 [running]:\nmain.(*plugin).Register(...)" in (
        plugin.log_tail()
    )
    assert plugin.calls("Register") == [] and kubelet_stub.registrations == []


def test_a_panic_fault_ends_the_plugin_as_a_go_panic_in_the_middle_of_the_call(kubelet_stub, start_plugin):
    plugin = start_plugin()
    endpoint = kubelet_stub.endpoint(RESOURCE)
    plugin.panic("Allocate", "runtime error: index out of range [3] with length 2")

    with pytest.raises(grpc.RpcError) as failed:
        endpoint.allocate(["dev-1"])

    assert failed.value.code() == grpc.StatusCode.UNAVAILABLE
    assert plugin.stop() == GO_PANIC_EXIT
    assert "panic: runtime error: index out of range [3] with length 2" in plugin.log_tail()
    [allocate] = plugin.calls("Allocate")
    assert not allocate.done  # in flight when the process died


def test_a_plugin_without_fault_defects_has_no_standing_faults(kubelet_stub, start_plugin):
    assert "standing" not in start_plugin().status()["faults"]
    assert "standing" not in start_plugin(defects=["list-omits-allocated"], socket_name="other.sock").status()["faults"]
