import json
import os
import socket
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion
from device_conformance.providers.local import host, leftovers, ports
from device_conformance.providers.local.layout import RunLayout
from device_conformance.toolchain import binaries, cache


def test_not_root_is_refused_with_the_fix(monkeypatch):
    monkeypatch.setattr(host.os, "geteuid", lambda: 1000)
    with pytest.raises(BadInput) as excinfo:
        host.preflight()
    assert "root" in excinfo.value.problem and "sudo" in excinfo.value.fix


def test_missing_packages_are_named_with_the_apt_command(monkeypatch):
    monkeypatch.setattr(host.os, "geteuid", lambda: 0)
    # Only etcd missing, whatever this machine has installed (a fresh CI machine runs `make test` first).
    monkeypatch.setattr(host, "REQUIRED", {"etcd": "etcd-server", "runc": "runc"})
    monkeypatch.setattr(host.shutil, "which", lambda command: None if command == "etcd" else "/usr/bin/x")
    with pytest.raises(BadInput) as excinfo:
        host.preflight()
    assert excinfo.value.problem.endswith(": etcd-server")
    assert "apt-get install -y etcd-server)" in excinfo.value.fix


def test_pinned_port_in_use_is_reported_with_its_number(monkeypatch, tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        monkeypatch.setenv("DEVICE_CONFORMANCE_BASE_PORT", str(port))
        with pytest.raises(BadInput) as excinfo:
            ports.allocate(tmp_path, set())
    assert f"port {port}" in excinfo.value.problem and "DEVICE_CONFORMANCE_BASE_PORT" in excinfo.value.fix


def test_port_blocks_of_live_runs_are_skipped(monkeypatch, tmp_path):
    monkeypatch.delenv("DEVICE_CONFORMANCE_BASE_PORT", raising=False)
    first = ports.allocate(tmp_path, set())
    second = ports.allocate(tmp_path, {first.etcd_client})
    assert second.etcd_client != first.etcd_client
    assert len(set(second.as_dict().values())) == 7


def test_user_bin_dir_without_binaries_names_what_is_missing(tmp_path):
    (tmp_path / "kubelet").write_text("#!/bin/sh\n")
    (tmp_path / "kubelet").chmod(0o755)
    with pytest.raises(BadInput) as excinfo:
        binaries.ensure_binaries(KubeVersion(1, 37, 1), user_dir=tmp_path)
    assert "kube-apiserver" in excinfo.value.problem and "kubelet," not in excinfo.value.problem


def test_corrupt_cached_binary_is_detected_by_its_checksum(tmp_path):
    for name in binaries.COMPONENTS:
        (tmp_path / name).write_bytes(name.encode())
    cache.write_manifest(tmp_path, binaries.COMPONENTS)
    assert cache.verify_manifest(tmp_path, binaries.COMPONENTS) is None
    (tmp_path / "kubelet").write_bytes(b"truncated")
    assert "kubelet does not match its recorded sha256" in cache.verify_manifest(tmp_path, binaries.COMPONENTS)


def test_half_written_cache_without_manifest_is_not_trusted(tmp_path):
    (tmp_path / "kubelet").write_bytes(b"x")
    assert cache.verify_manifest(tmp_path, binaries.COMPONENTS) == "no checksum manifest"


def test_run_left_by_a_crashed_session_is_cleaned(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("DEVICE_CONFORMANCE_STATE", str(tmp_path))
    layout = RunLayout.for_run("rdead01")
    layout.root.mkdir(parents=True)
    dead_pid = 2**22 + 12345  # above pid_max on our hosts: never a live process
    state = {
        "run_id": "rdead01",
        "k8s_version": "1.37.1",
        "node_name": "dc-rdead01",
        "owner_pid": dead_pid,
        "owner_started": 1,
    }
    layout.state_file.write_text(json.dumps(state))
    kept = RunLayout.for_run("rkept01")
    kept.root.mkdir(parents=True)
    kept.state_file.write_text(json.dumps({**state, "run_id": "rkept01", "kept": True}))
    assert leftovers.clean_leftovers(print) == ["rdead01"]
    assert not layout.root.exists() and kept.root.exists()
    assert "left by a crashed or interrupted session" in capsys.readouterr().out


def test_state_root_is_short_enough_for_sockets():
    assert len(os.fspath(Path("/var/lib/device-conformance/runs/r123456/node/kubelet/plugins_registry"))) < 80


@pytest.mark.parametrize(
    ("expression", "names"),
    [
        ("smoke", ["smoke"]),
        ("smoke or ((deviceplugin or dra or taints) and not slow)", ["smoke", "deviceplugin", "dra", "taints", "slow"]),
        ("scenario(id='DP6') and not since", ["scenario", "since"]),
        ('known_bug(name="a (b) or c") or dra', ["known_bug", "dra"]),
    ],
)
def test_marker_names_of_an_expression_skip_keywords_and_call_arguments(expression, names):
    from device_conformance.pytest_plugin.marker_expression import marker_names

    assert marker_names(expression) == names


def test_upgrade_from_is_judged_only_when_the_user_names_it():
    from device_conformance.settings import resolve

    # The default (1.36.4) is not older than 1.35.8: a matrix run of 1.35 skips the upgrade tests instead.
    assert resolve({}, {"K8S_VERSION": "1.35.8"}).upgrade_from.value == KubeVersion(1, 36, 4)
    with pytest.raises(BadInput) as excinfo:
        resolve({"upgrade_from": "1.38.0"}, {})
    assert excinfo.value.problem.startswith(
        f"--upgrade-from '1.38.0' is not older than the version under test {DEFAULT_K8S_VERSION}"
    )
    assert (
        excinfo.value.fix
        == "set UPGRADE_FROM to a 1.36.x release (e.g. 1.36.4), or drop --upgrade-from for the default"
    )
