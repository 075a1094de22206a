"""KindNode against the real systemd 252 and journald as PID 1 of a container (kind's kubelet.service
settings), under a real dockerd: the calls a kind node answers, minus crictl and the binary swap
(the fake node covers those)."""

from __future__ import annotations

import socket
import time

import pytest

pytestmark = pytest.mark.docker


def test_systemd_restarts_and_reports_the_main_pid(systemd_node):
    before = systemd_node.kubelet.pid()
    assert before > 0
    systemd_node.kubelet.restart()
    assert systemd_node.kubelet.pid() not in (0, before)
    assert systemd_node.kubelet.healthy()


def test_systemctl_stop_holds_it_down_and_start_brings_it_back(systemd_node):
    systemd_node.kubelet.stop()
    assert systemd_node.kubelet.pid() == 0
    assert not systemd_node.kubelet.healthy()
    systemd_node.kubelet.start()
    assert systemd_node.kubelet.healthy()


def test_restart_always_brings_a_sigkilled_kubelet_back(systemd_node):
    killed = systemd_node.kubelet.pid()
    systemd_node.kubelet.crash()
    assert systemd_node.kubelet.pid() not in (0, killed)


def test_sigstop_and_sigcont_by_pid(systemd_node):
    systemd_node.kubelet.freeze()
    try:
        assert not systemd_node.kubelet.healthy()
    finally:
        systemd_node.kubelet.thaw()
    systemd_node.kubelet.wait_healthy(timeout=10)


def test_journal_since_the_mark_has_the_new_kubelet_only(systemd_node):
    first = systemd_node.kubelet.pid()
    time.sleep(0.2)  # journald has stamped the first start's lines; marks are to the microsecond, not whole seconds
    mark = systemd_node.kubelet.log_mark()
    systemd_node.kubelet.restart()
    log = systemd_node.kubelet.log_since(mark)
    assert f"stand-in kubelet started pid {systemd_node.kubelet.pid()}" in log
    assert f"started pid {first}\n" not in log


def test_files_and_sockets_through_exec_and_mounts(systemd_node, docker_engine):
    systemd_node.write_file("/var/lib/kubelet/cpu_manager_state", b"{}", mode=0o644)
    assert systemd_node.read_file("/var/lib/kubelet/cpu_manager_state") == b"{}"
    systemd_node.delete_file("/var/lib/kubelet/cpu_manager_state")
    with pytest.raises(FileNotFoundError):
        systemd_node.read_file("/var/lib/kubelet/cpu_manager_state")
    host_dir = systemd_node.host_path("/var/lib/kubelet/device-plugins")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(host_dir / "plugin.sock"))
    try:
        from device_conformance.providers.kind.node import KindNode

        blind = KindNode(docker_engine, systemd_node.name, {}, "1.37.1")
        assert blind.list_sockets("/var/lib/kubelet/device-plugins") == ["plugin.sock"]
    finally:
        server.close()


def test_docker_restart_boots_systemd_and_the_kubelet_again(systemd_node):
    before = systemd_node.kubelet.pid()
    systemd_node.write_file("/var/lib/kubelet/device-plugins/keep", b"kept")
    systemd_node.reboot(timeout=60)
    assert systemd_node.kubelet.healthy()
    assert systemd_node.exec(["systemctl", "is-active", "kubelet"]).strip() == "active"
    assert systemd_node.read_file("/var/lib/kubelet/device-plugins/keep") == b"kept"
    assert systemd_node.kubelet.pid() > 0 and before > 0
