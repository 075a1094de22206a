"""Sanity mode and a plugin's socket name (the fake's `long-socket-name` pattern, 60 characters, as vendor mode runs
it: `python -m device_conformance.fakes.device_plugin.as_subject`): it passes in a --socket-dir as short as the
kubelet's own; in a longer one where it cannot bind, the run stops with one error quoting the subject's log and
naming sun_path and the fix (the name would work on a node); a name no node's kubelet could dial is the subject's
FAIL of DP-REG-ENDPOINT, whether it exits or keeps running."""

from __future__ import annotations

import shlex
import sys

import pytest

from device_conformance.certify import limits
from device_conformance.certify.clauses import DEVICE_PLUGIN_CLAUSES
from device_conformance.certify.device_plugin import DevicePluginTarget, certify_device_plugin
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS
from device_conformance.core.errors import BadInput

RESOURCE = "example.com/dev"
AS_SUBJECT = [sys.executable, "-m", "device_conformance.fakes.device_plugin.as_subject", "--resource", RESOURCE]


def certify(socket_dir, tmp_path, *extra):
    command = shlex.join([*AS_SUBJECT, "--socket-dir", str(socket_dir), *extra])
    target = DevicePluginTarget(str(socket_dir), RESOURCE, command, workdir=tmp_path / "work", reregister_timeout=8.0)
    return certify_device_plugin(target)


def test_a_60_character_socket_name_passes_in_a_socket_dir_as_short_as_the_kubelets(plugin_root, tmp_path):
    (plugin_root / "dp").mkdir()
    cert = certify(plugin_root / "dp", tmp_path, "--pattern", "long-socket-name")
    verdicts = {r.clause.id: r.verdict for r in cert.results}
    assert FAIL not in verdicts.values(), [(r.clause.id, r.message) for r in cert.results if r.verdict == FAIL]
    endpoint = next(r for r in cert.results if r.clause.id == "DP-REG-ENDPOINT")
    assert endpoint.verdict == PASS
    name = endpoint.evidence[0].split("'")[1]
    assert len(name) == 60 and name.startswith("dc-vendor-long-socket-name-"), endpoint.evidence
    assert [c.id for c in DEVICE_PLUGIN_CLAUSES if verdicts[c.id] == PASS][:4] == [
        "DP-REG-VERSION",
        "DP-REG-ENDPOINT",
        "DP-REG-RESOURCE",
        "DP-OPTIONS",
    ]


def test_a_socket_dir_too_long_for_the_plugins_socket_name_is_bad_input_with_its_log(plugin_root, tmp_path):
    """/tmp/cdp-XXXXXXXX/ + 28 = 46 bytes: kubelet.sock fits, the 60-character socket not (gRPC C-core)."""
    socket_dir = plugin_root / ("d" * (46 - len(str(plugin_root)) - 1))
    socket_dir.mkdir()
    with pytest.raises(BadInput) as raised:
        certify(socket_dir, tmp_path, "--pattern", "long-socket-name")
    first, log = raised.value.problem.splitlines()[:2]
    assert first.startswith(
        f"the subject could not bind its socket in --socket-dir {socket_dir} (46 bytes, its socket "
    )
    assert first.endswith("' 60 bytes): a Unix socket path holds at most 107 bytes (sun_path, unix(7)); its log:")
    assert log.startswith("  log: ") and "Path name should not have more than 107 characters" in log
    assert raised.value.fix == (
        "certify in a --socket-dir no longer than the kubelet's own /var/lib/kubelet/device-plugins (31 bytes), e.g. "
        "$(mktemp -d /tmp/dp-XXXXXX): a socket name that works on a node then works here"
    )
    assert not any(socket_dir.iterdir()), "the stub's kubelet.sock is gone, no socket left"


UNDIALABLE = "n" * 95 + ".sock"
# What the FAIL says: the bytes, sun_path, and what the kubelet dials (clauses.DP_SERVER).
WHY = (
    f"its socket '{UNDIALABLE}' (100 bytes) cannot be bound: a Unix socket path holds at most 107 bytes (sun_path, "
    f"unix(7)), and on a node the kubelet dials /var/lib/kubelet/device-plugins/{UNDIALABLE}, over it too "
    "(pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go: Register dials socketDir/endpoint)"
)


def verdicts(cert):
    return {r.clause.id: (r.verdict, r.message) for r in cert.results}


def test_a_socket_name_no_kubelet_could_dial_is_the_subjects_fail(plugin_root, tmp_path):
    """A plugin naming its socket with 100 characters binds nowhere: /var/lib/kubelet/device-plugins/<name> is 132
    bytes. One FAIL, DP-REG-ENDPOINT's (the rule it breaks); DP-REG-VERSION cannot be judged with nothing registered
    and is NOT APPLICABLE, as are the rest (crashed at start-up). Seen failing before the fix: the FAIL was
    DP-REG-VERSION's (failed_ids == ['DP-REG-VERSION']), the crash charged to the first clause that waited."""
    (plugin_root / "dp").mkdir()
    script = tmp_path / "plugin.py"
    script.write_text(
        "import sys\nfrom device_conformance.fakes.device_plugin import as_subject\n"
        f"as_subject.socket_name = lambda patterns: {UNDIALABLE!r}\nsys.exit(as_subject.main())\n"
    )
    command = shlex.join([sys.executable, str(script), "--resource", RESOURCE, "--socket-dir", str(plugin_root / "dp")])
    target = DevicePluginTarget(str(plugin_root / "dp"), RESOURCE, command, workdir=tmp_path / "work")
    cert = certify_device_plugin(target)
    assert cert.failed_ids() == ["DP-REG-ENDPOINT"]
    found = verdicts(cert)
    verdict, message = found["DP-REG-ENDPOINT"]
    assert verdict == FAIL
    assert message.startswith("the subject crashed before this clause (exit "), message
    assert message.endswith(f"; the check saw: no RegisterRequest reached kubelet.sock ({WHY})"), message
    assert found["DP-REG-VERSION"] == (
        NOT_APPLICABLE,
        "nothing registered: the subject cannot bind its socket (DP-REG-ENDPOINT)",
    )
    rest = {v for clause, v in found.items() if clause not in ("DP-REG-VERSION", "DP-REG-ENDPOINT")}
    assert rest == {(NOT_APPLICABLE, "the subject crashed at start-up, see DP-REG-ENDPOINT")}
    endpoint = next(r for r in cert.results if r.clause.id == "DP-REG-ENDPOINT")
    assert any("Path name should not have more than 107 characters" in line for line in endpoint.evidence)


def test_a_subject_that_keeps_running_unbound_is_judged_the_same(plugin_root, tmp_path, monkeypatch):
    """A plugin that logs its bind failure and keeps running (retrying, say) is no crash: the same FAIL of
    DP-REG-ENDPOINT once the registration wait is over, every other clause NOT APPLICABLE (nothing registered).
    Seen failing before the fix: every clause FAILed 'no RegisterRequest reached kubelet.sock (...)', the first
    DP-REG-VERSION."""
    monkeypatch.setattr(limits, "REGISTER_TIMEOUT", 1.0)
    (plugin_root / "dp").mkdir()
    path = plugin_root / "dp" / UNDIALABLE
    script = tmp_path / "plugin.py"
    script.write_text(f"import time\nprint('listen unix {path}: bind: invalid argument', flush=True)\ntime.sleep(60)\n")
    target = DevicePluginTarget(
        str(plugin_root / "dp"), RESOURCE, shlex.join([sys.executable, str(script)]), workdir=tmp_path / "work"
    )
    cert = certify_device_plugin(target)
    assert cert.failed_ids() == ["DP-REG-ENDPOINT"]
    found = verdicts(cert)
    assert found["DP-REG-ENDPOINT"] == (FAIL, f"no RegisterRequest reached kubelet.sock ({WHY})")
    nothing = (NOT_APPLICABLE, "nothing registered: the subject cannot bind its socket (DP-REG-ENDPOINT)")
    assert {v for clause, v in found.items() if clause != "DP-REG-ENDPOINT"} == {nothing}
