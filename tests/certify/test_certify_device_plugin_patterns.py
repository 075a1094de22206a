"""What real device plugins do, as patterns of our fake, and the certifier's verdict on each: harmless ones pass,
a crash is one FAIL quoting the subject's own log, socket paths are held to sun_path."""

import os
import re

import pytest
from certify_subjects import run_device_plugin

from device_conformance.certify.clauses import BY_ID, DEVICE_PLUGIN_CLAUSES
from device_conformance.certify.device_plugin import (
    DevicePluginCertifier,
    DevicePluginTarget,
    certify_device_plugin,
)
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Evidence, run_step
from device_conformance.core.errors import BadInput
from device_conformance.fakes.kubelet_stub import StubRegistration
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb

IDS = "['dev-1', 'dev-2', 'dev-3']"
OPTIONS_PANIC = "  log: panic: runtime error: invalid memory address or nil pointer dereference"


def verdicts(cert):
    return {r.clause.id: r.verdict for r in cert.results}


def result(cert, clause_id):
    return next(r for r in cert.results if r.clause.id == clause_id)


def test_an_empty_list_then_the_full_one_is_judged_on_the_full_one():
    """The kubelet replaces the device set with each response (manager.go genericDeviceUpdateCallback)."""
    cert = run_device_plugin(patterns=["list-empty-then-full"])
    assert verdicts(cert) == {c.id: PASS for c in DEVICE_PLUGIN_CLAUSES}, [
        (r.clause.id, r.message) for r in cert.results if r.verdict != PASS
    ]
    first = result(cert, "DP-LAW-FIRST")
    settled = rf"settled list: 3 device\(s\) {re.escape(IDS)}"
    assert re.fullmatch(rf"first response after \d+\.\ds with 0 device\(s\); {settled}", first.message)
    assert re.fullmatch(r"<- ListAndWatch #1 \(\+\d+\.\d\ds\) \{\}", first.evidence[0])
    assert result(cert, "DP-LAW-STABLE").message == f"both streams settle on {IDS}"
    assert result(cert, "DP-ALLOC").message == "Allocate [dev-1]: one container response"
    assert result(cert, "DP-ALLOC-MULTI").message == "two container requests, two container responses"
    assert result(cert, "DP-PREFERRED").message == "preferred ['dev-3'] for must-include ['dev-3'], size 1"


def test_a_plugin_that_registers_another_resource_first_is_judged_on_the_one_asked_for():
    """One process, two resources, each its own socket and Register (NVIDIA k8s-device-plugin with a mixed MIG
    strategy): the certifier judges --resource's registration, also after the kubelet restart, and notes the other."""
    cert = run_device_plugin(patterns=["another-resource-first"])
    assert verdicts(cert) == {c.id: PASS for c in DEVICE_PLUGIN_CLAUSES}, [
        (r.clause.id, r.message) for r in cert.results if r.verdict != PASS
    ]
    assert result(cert, "DP-REG-RESOURCE").message == (
        "'example.com/dev' is a valid extended resource name; the subject also registered ['example.com/dev-other']"
    )
    assert result(cert, "DP-REG-ENDPOINT").evidence[0].startswith("endpoint 'fake.sock' -> ")
    assert result(cert, "DP-REREGISTER").evidence[-2] == (
        '-> Register {"endpoint": "fake.sock", "options": {"get_preferred_allocation_available": true, '
        '"pre_start_required": true}, "resource_name": "example.com/dev", "version": "v1beta1"}'
    )


def test_a_plugin_that_answers_no_preference_is_not_failed_for_it():
    """An empty PreferredAllocationResponse, as upstream's own stub answers (plugin/v1beta1/stub.go
    defaultGetPreferredAllocFunc): the kubelet picks the devices itself, so there is nothing to judge."""
    cert = run_device_plugin(patterns=["no-preference"])
    expected = {c.id: PASS for c in DEVICE_PLUGIN_CLAUSES} | {"DP-PREFERRED": NOT_APPLICABLE}
    assert verdicts(cert) == expected, [(r.clause.id, r.message) for r in cert.results if r.verdict != PASS]
    assert result(cert, "DP-PREFERRED").message == (
        "answered no preference (an empty response): allowed, the kubelet then picks the devices itself; there is no "
        "preference to judge"
    )
    assert result(cert, "DP-PREFERRED").evidence[-1] == "<- {}"


def test_a_plugin_registering_without_options_passes_on_what_get_device_plugin_options_answers():
    """The kubelet never reads RegisterRequest.options (manager.go PluginConnected keeps GetDevicePluginOptions'
    answer): a Register without them is noted, not failed."""
    cert = run_device_plugin(patterns=["register-without-options"])
    assert verdicts(cert) == {c.id: PASS for c in DEVICE_PLUGIN_CLAUSES}, [
        (r.clause.id, r.message) for r in cert.results if r.verdict != PASS
    ]
    options = result(cert, "DP-OPTIONS")
    assert options.message == (
        'answered {"get_preferred_allocation_available": true, "pre_start_required": true}; Register carried {}, '
        "which the kubelet does not read"
    )
    assert (
        options.evidence[-1] == "note: Register carried other options; the kubelet uses GetDevicePluginOptions' answer"
    )


def test_a_plugin_that_panics_in_get_device_plugin_options_fails_dp_options_once():
    """`return nil, nil` from GetDevicePluginOptions panics in gRPC's marshalling (kubernetes#109016); the kubelet
    calls it right after Register, so every restart crashes the same way: one FAIL, the rest NOT APPLICABLE."""
    cert = run_device_plugin(["options-crash"])
    options = result(cert, "DP-OPTIONS")
    assert cert.failed_ids() == ["DP-OPTIONS"], [(r.clause.id, r.message) for r in cert.results if r.verdict == FAIL]
    assert options.message.startswith(
        "the subject crashed before this clause (exit 2); the check saw: the kubelet's GetDevicePluginOptions "
        "during Register failed: failed to get device plugin options: rpc error: code = Unavailable desc = "
    )
    assert OPTIONS_PANIC in options.evidence
    assert "subject process: exit 2" in options.evidence
    assert "certifier: the restarted subject crashed at start-up too (exit 2):" in options.evidence
    assert not any("Traceback" in line for line in options.evidence)
    registration = {"DP-REG-VERSION": PASS, "DP-REG-ENDPOINT": PASS, "DP-REG-RESOURCE": PASS, "DP-OPTIONS": FAIL}
    rest = {c.id: NOT_APPLICABLE for c in DEVICE_PLUGIN_CLAUSES if c.id not in registration}
    assert verdicts(cert) == registration | rest
    assert {result(cert, c).message for c in rest} == {"the subject crashed at start-up, see DP-OPTIONS"}
    assert cert.notes[0] == "subject process: started 2 time(s), exit 2"


def test_a_plugin_that_panics_at_registration_gets_one_fail_not_one_per_clause():
    cert = run_device_plugin(["register-crash"])
    first = result(cert, "DP-REG-VERSION")
    assert cert.failed_ids() == ["DP-REG-VERSION"], [(r.clause.id, r.message) for r in cert.results]
    assert first.message == (
        "the subject crashed during this clause (exit 2); the check saw: no RegisterRequest reached kubelet.sock "
        "(the subject exited (exit 2) before registering)"
    )
    assert "  log: panic: assignment to entry in nil map" in first.evidence
    assert {r.clause.id: r.message for r in cert.results[1:]} == {
        c.id: "the subject crashed at start-up, see DP-REG-VERSION" for c in DEVICE_PLUGIN_CLAUSES[1:]
    }
    assert sum(r.seconds for r in cert.results) < 15, "no clause waits out a timeout on a dead subject"


def test_a_60_character_socket_name_in_a_short_directory_passes_everything():
    """The path arithmetic: /tmp/cdp-XXXXXXXX/dp/ + 60 characters is 81 bytes, within sun_path's 107."""
    name = "a" * 55 + ".sock"
    cert = run_device_plugin(socket_name=name)
    assert verdicts(cert) == {c.id: PASS for c in DEVICE_PLUGIN_CLAUSES}, [
        (r.clause.id, r.message) for r in cert.results if r.verdict != PASS
    ]
    endpoint = result(cert, "DP-REG-ENDPOINT")
    assert re.fullmatch(rf"endpoint '{name}' -> /tmp/cdp-\w{{8}}/dp/{name} \(81 bytes\)", endpoint.evidence[0])
    assert endpoint.message.endswith(f"/dp/{name} is a socket the kubelet dialled during Register")


def test_a_socket_directory_too_long_for_kubelet_sock_is_bad_input_before_anything_starts(tmp_path, plugin_root):
    socket_dir = f"{plugin_root}/" + "d" * (108 - len(f"{plugin_root}//kubelet.sock"))  # kubelet.sock: 108 bytes
    target = DevicePluginTarget(socket_dir, command="sleep 60", workdir=tmp_path)
    with pytest.raises(BadInput) as raised:
        certify_device_plugin(target)
    assert str(raised.value).splitlines()[0] == (
        f"the kubelet socket {socket_dir}/kubelet.sock is 108 bytes, over sun_path's 107 (unix(7)): a plugin cannot "
        "bind it (bind: invalid argument) and the kubelet cannot dial it (client.go dial)"
    )
    assert not os.path.exists(socket_dir), "nothing was created"


def test_an_endpoint_named_too_long_for_the_directory_is_bad_input(tmp_path):
    socket_dir, endpoint = "/tmp/short", "e" * 97  # 11 + 97 = 108 bytes
    with pytest.raises(BadInput) as raised:
        certify_device_plugin(DevicePluginTarget(socket_dir, endpoint=endpoint, workdir=tmp_path))
    assert str(raised.value).splitlines()[0].startswith(f"the plugin's endpoint {socket_dir}/{endpoint} is 108 bytes")
    assert "certify in a shorter --socket-dir (at most 9 bytes for 'eee" in str(raised.value)


def test_a_registered_endpoint_longer_than_sun_path_fails_dp_reg_endpoint_naming_the_limit(plugin_root):
    certifier = DevicePluginCertifier(DevicePluginTarget(str(plugin_root)))
    endpoint = "p" * (108 - len(str(plugin_root)) - 1)
    certifier.registration = StubRegistration("v1beta1", endpoint, "example.com/dev", pb.DevicePluginOptions())
    verdict = run_step(BY_ID["DP-REG-ENDPOINT"], certifier.reg_endpoint)
    assert (verdict.verdict, verdict.message) == (
        FAIL,
        f"the endpoint {plugin_root}/{endpoint} is 108 bytes, over sun_path's 107 (unix(7)): a plugin cannot bind "
        "it (bind: invalid argument) and the kubelet cannot dial it (client.go dial)",
    )


def test_the_catalogues_pattern_tables_name_only_real_clauses_and_patterns():
    from device_conformance.certify.clauses import DEVICE_PLUGIN_PATTERNS_PASSED, DRA_PATTERNS_PASSED
    from device_conformance.fakes.device_plugin.config import PATTERNS as DP_PATTERNS
    from device_conformance.fakes.dra_driver.config import PATTERNS as DRA_PATTERNS

    for table, kind, patterns in (
        (DEVICE_PLUGIN_PATTERNS_PASSED, "DP-", DP_PATTERNS),
        (DRA_PATTERNS_PASSED, "DRA-", DRA_PATTERNS),
    ):
        assert all(clause in BY_ID and clause.startswith(kind) for clause in table), sorted(table)
        named = {p for text in table.values() for p in re.findall(r"`([a-z-]+)`", text)}
        assert named <= set(patterns), named - set(patterns)
        assert set(patterns) <= named, f"a pattern no clause row names: {set(patterns) - named}"


def test_a_device_on_two_numa_nodes_passes_everything():
    """api.proto TopologyInfo.nodes is repeated: a device may sit on two NUMA nodes."""
    cert = run_device_plugin(patterns=["device-on-two-numa-nodes"])
    assert verdicts(cert) == {c.id: PASS for c in DEVICE_PLUGIN_CLAUSES}, [
        (r.clause.id, r.message) for r in cert.results if r.verdict != PASS
    ]
    first_list = result(cert, "DP-LAW-TOPOLOGY").evidence[0]
    assert '"ID": "dev-1", "health": "Healthy", "topology": {"nodes": [{}, {"ID": "1"}]}' in first_list


class RecordingStub:
    """A DevicePlugin client that answers at once and records each call's deadline."""

    def __init__(self):
        self.deadlines = {}

    def Allocate(self, request, timeout):
        self.deadlines["Allocate"] = timeout
        return pb.AllocateResponse(container_responses=[pb.ContainerAllocateResponse()])

    def PreStartContainer(self, request, timeout):
        self.deadlines["PreStartContainer"] = timeout
        return pb.PreStartContainerResponse()


def test_allocate_and_prestart_are_waited_for_as_long_as_the_kubelet_waits(plugin_root, monkeypatch):
    """Allocate has no deadline in the kubelet (endpoint.go allocate: the admission's context), so only a hang
    catcher bounds it; PreStartContainer has the kubelet's 30 s (KubeletPreStartContainerRPCTimeoutInSecs)."""
    certifier = DevicePluginCertifier(DevicePluginTarget(str(plugin_root)))
    stub = RecordingStub()
    monkeypatch.setattr(certifier, "_stub", lambda: stub)
    monkeypatch.setattr(certifier, "_usable_ids", lambda: ["dev-1"])
    monkeypatch.setattr(certifier, "_options", lambda: pb.DevicePluginOptions(pre_start_required=True))
    certifier._allocate(Evidence(), [["dev-1"]])
    certifier.prestart(Evidence())
    assert stub.deadlines == {"Allocate": 120.0, "PreStartContainer": 30.0}
