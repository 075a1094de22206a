"""The runc wrapper (providers/kind/capwrap.py) and the private dockerd's daemon.json, without Docker.

The capability sets are real: this VM's CapBnd (CAP_SYS_RESOURCE, bit 24, missing) and the 38
capabilities dockerd 20.10 asks for in privileged mode (moby oci/caps, CAP_CHOWN..CAP_CHECKPOINT_RESTORE
less those its capability library does not know); the wrapper is run as the executable dockerd
registers, against a stand-in runc that records what it was given.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from device_conformance.providers.kind import capwrap, dockerd

# /proc/self/status lines of this project's VMs (Firecracker guests): CAP_SYS_RESOURCE is not bounded.
VM_STATUS = "Name:\tcat\nCapInh:\t0000000000000000\nCapPrm:\t000001fffeffffff\nCapBnd:\t000001fffeffffff\n"
FULL_STATUS = "Name:\tcat\nCapBnd:\t000001ffffffffff\n"
PRIVILEGED = list(capwrap.CAPABILITIES[:38])  # what dockerd 20.10 put in config.json here (CapEff 3fffffffff)


def oci_spec(caps: list[str]) -> dict:
    return {
        "ociVersion": "1.0.2-dev",
        "process": {
            "user": {"uid": 0, "gid": 0},
            "args": ["/bin/busybox", "sleep", "600"],
            "capabilities": {name: list(caps) for name in capwrap.CAP_SETS if name != "ambient"},
            "noNewPrivileges": False,
        },
        "root": {"path": "rootfs"},
        "linux": {"namespaces": [{"type": "mount"}]},
    }


def test_bounding_mask_names_exactly_the_capability_this_vm_lacks():
    mask = capwrap.bounding_mask(VM_STATUS)
    assert mask == 0x1FFFEFFFFFF
    assert capwrap.missing_from_bounding(mask, 40) == ["CAP_SYS_RESOURCE"]
    assert capwrap.missing_from_bounding(capwrap.bounding_mask(FULL_STATUS), 40) == []
    # A newer kernel's capability past our table is named by number, not dropped silently.
    assert capwrap.missing_from_bounding(0x1FFFFFFFFFF, 41) == ["CAP_41"]


def test_host_missing_capabilities_reads_the_status_and_cap_last_cap(tmp_path):
    (tmp_path / "status").write_text(VM_STATUS)
    (tmp_path / "cap_last_cap").write_text("40\n")
    assert dockerd.host_missing_capabilities(tmp_path / "status", tmp_path / "cap_last_cap") == ["CAP_SYS_RESOURCE"]
    (tmp_path / "status").write_text(FULL_STATUS)
    assert dockerd.host_missing_capabilities(tmp_path / "status", tmp_path / "cap_last_cap") == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # containerd-shim runc v2's create (github.com/containerd/go-runc: runc.go Create).
        (
            ["--root", "/run/r", "--log", "/b/log.json", "--log-format", "json", "create", "--bundle", "/b",
             "--pid-file", "/b/init.pid", "id1"],
            ("/b/config.json", True),
        ),
        (["--debug", "run", "-b=/x", "id1"], ("/x/config.json", True)),
        (["--systemd-cgroup", "run", "id1"], ("/cwd/config.json", True)),
        (["--root", "/r", "exec", "--process", "/tmp/runc-process1", "--detach", "id1"], ("/tmp/runc-process1", False)),
        (["exec", "-p", "/tmp/p.json", "id1"], ("/tmp/p.json", False)),
        (["exec", "id1", "sh"], (None, False)),
        (["--root", "/run/r", "start", "id1"], (None, False)),
        (["--root", "/run/r", "delete", "--force", "id1"], (None, False)),
        (["--version"], (None, False)),
    ],
)  # fmt: skip
def test_the_spec_file_is_found_where_runc_reads_it(argv, expected):
    assert capwrap.spec_file(argv, "/cwd") == expected


def test_create_rewrites_config_json_without_the_missing_capability(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(oci_spec(PRIVILEGED)))
    removed = capwrap.rewrite(str(tmp_path / "config.json"), True, frozenset({"CAP_SYS_RESOURCE"}))
    assert removed == ["CAP_SYS_RESOURCE"]
    spec = json.loads((tmp_path / "config.json").read_text())
    want = [cap for cap in PRIVILEGED if cap != "CAP_SYS_RESOURCE"]
    assert spec["process"]["capabilities"] == dict.fromkeys(("bounding", "effective", "inheritable", "permitted"), want)
    # Everything else is left as it was.
    assert spec["process"]["args"] == ["/bin/busybox", "sleep", "600"]
    assert spec["linux"] == {"namespaces": [{"type": "mount"}]}
    assert sorted(os.listdir(tmp_path)) == ["config.json"]


def test_an_unprivileged_spec_is_not_touched(tmp_path):
    default = ["CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW"]
    text = json.dumps(oci_spec(default), indent=4)
    (tmp_path / "config.json").write_text(text)
    assert capwrap.rewrite(str(tmp_path / "config.json"), True, frozenset({"CAP_SYS_RESOURCE"})) == []
    assert (tmp_path / "config.json").read_text() == text


def test_exec_rewrites_the_process_file(tmp_path):
    process = oci_spec(PRIVILEGED)["process"]
    process["capabilities"]["ambient"] = ["CAP_SYS_RESOURCE", "CAP_NET_ADMIN"]
    (tmp_path / "process.json").write_text(json.dumps(process))
    removed = capwrap.rewrite(str(tmp_path / "process.json"), False, frozenset({"CAP_SYS_RESOURCE"}))
    assert removed == ["CAP_SYS_RESOURCE"]
    written = json.loads((tmp_path / "process.json").read_text())
    assert written["capabilities"]["ambient"] == ["CAP_NET_ADMIN"]
    assert "CAP_SYS_RESOURCE" not in written["capabilities"]["effective"]
    assert len(written["capabilities"]["effective"]) == 37


def run_wrapper(tmp_path: Path, argv: list[str]) -> tuple[list[str], dict]:
    """Run the rendered wrapper as dockerd would, with a stand-in runc that records argv and the spec."""
    record = tmp_path / "record.json"
    fake_runc = tmp_path / "runc"
    fake_runc.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        "args = sys.argv[1:]\n"
        "bundle = '--bundle' in args\n"
        "path = args[args.index('--bundle') + 1] + '/config.json' if bundle else args[args.index('--process') + 1]\n"
        f"json.dump({{'argv': sys.argv, 'spec': json.load(open(path))}}, open({str(record)!r}, 'w'))\n"
    )
    fake_runc.chmod(0o755)
    wrapper = tmp_path / "capwrap"
    wrapper.write_text(dockerd.render_wrapper(str(fake_runc)))
    wrapper.chmod(0o755)
    subprocess.run([str(wrapper), *argv], check=True, timeout=30)
    recorded = json.loads(record.read_text())
    return recorded["argv"], recorded["spec"]


@pytest.mark.skipif(
    dockerd.host_missing_capabilities() != ["CAP_SYS_RESOURCE"], reason="needs a host that lacks CAP_SYS_RESOURCE"
)
def test_the_rendered_wrapper_trims_then_execs_runc_with_the_same_arguments(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "config.json").write_text(json.dumps(oci_spec(PRIVILEGED)))
    argv = ["--root", "/run/r", "--log-format", "json", "create", "--bundle", str(bundle), "id1"]
    got_argv, spec = run_wrapper(tmp_path, argv)
    assert got_argv == [str(tmp_path / "runc"), *argv]
    assert spec["process"]["capabilities"]["bounding"] == [c for c in PRIVILEGED if c != "CAP_SYS_RESOURCE"]
    (tmp_path / "p.json").write_text(json.dumps(oci_spec(PRIVILEGED)["process"]))
    got_argv, process = run_wrapper(tmp_path, ["exec", "--process", str(tmp_path / "p.json"), "--detach", "id1"])
    assert got_argv[1:] == ["exec", "--process", str(tmp_path / "p.json"), "--detach", "id1"]
    assert process["capabilities"]["permitted"] == [c for c in PRIVILEGED if c != "CAP_SYS_RESOURCE"]


def test_render_wrapper_fills_in_the_real_runc_and_a_one_word_interpreter_option():
    text = dockerd.render_wrapper("/usr/sbin/runc", python="/venv/bin/python")
    assert text.splitlines()[0] == "#!/venv/bin/python -IS"
    assert "REAL_RUNC = '/usr/sbin/runc'\n" in text
    assert 'REAL_RUNC = "runc"' not in text


def test_daemon_json_registers_the_wrapper_as_the_default_runtime(tmp_path):
    assert dockerd.daemon_config(tmp_path / "capwrap") == {
        "runtimes": {"dc-capwrap": {"path": str(tmp_path / "capwrap")}},
        "default-runtime": "dc-capwrap",
    }
    assert dockerd.daemon_config(None) == {}


def test_dockerd_flags_keep_the_host_firewall_and_docker0_alone(tmp_path):
    argv = dockerd.dockerd_argv("/usr/sbin/dockerd", tmp_path, "/dcd-x")
    assert argv[0] == "/usr/sbin/dockerd"
    for flag in ("--iptables=false", "--ip-masq=false", "--bridge=none", "--cgroup-parent=/dcd-x"):
        assert flag in argv
    assert f"--config-file={tmp_path / 'daemon.json'}" in argv
    assert f"--host=unix://{tmp_path / 'docker.sock'}" in argv
