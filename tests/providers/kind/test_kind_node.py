"""KindNode against a real container under a real dockerd: exec, signals, files, docker cp, docker restart."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.providers.kind.node import KindNode

pytestmark = pytest.mark.docker

FAKE_KUBELET_V2 = Path(__file__).with_name("fake_node") / "kubelet-v2"


def test_restart_gives_a_new_healthy_kubelet(fake_node):
    before = fake_node.kubelet.pid()
    assert before > 0
    fake_node.kubelet.restart()
    assert fake_node.kubelet.pid() not in (0, before)
    assert fake_node.kubelet.healthy()


def test_stop_keeps_it_down_until_start(fake_node):
    fake_node.kubelet.stop()
    assert fake_node.kubelet.pid() == 0
    assert not fake_node.kubelet.healthy()
    fake_node.kubelet.start()
    assert fake_node.kubelet.healthy()


def test_sigkilled_kubelet_is_restarted_by_the_node_supervisor(fake_node):
    killed = fake_node.kubelet.pid()
    fake_node.kubelet.crash()
    assert fake_node.kubelet.pid() not in (0, killed)
    assert fake_node.kubelet.healthy()


def test_sigstop_freezes_healthz_and_sigcont_thaws_it(fake_node):
    fake_node.kubelet.freeze()
    try:
        assert not fake_node.kubelet.healthy()
    finally:
        fake_node.kubelet.thaw()
    fake_node.kubelet.wait_healthy(timeout=10)


def test_files_outside_the_mounts_go_through_docker_exec(fake_node):
    path = "/var/lib/kubelet/dra_manager_state"
    with pytest.raises(BadInput, match="not bind-mounted"):
        fake_node.host_path(path)
    fake_node.write_file(path, b'{"checksum": 1}\n', mode=0o640)
    assert fake_node.read_file(path) == b'{"checksum": 1}\n'
    assert fake_node.exec(["stat", "-c", "%a", path]).strip() == "640"
    fake_node.delete_file(path)
    with pytest.raises(FileNotFoundError):
        fake_node.read_file(path)


def test_mounted_directories_are_the_same_files_on_host_and_node(fake_node):
    path = "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
    fake_node.write_file(path, b"checkpoint bytes")
    assert fake_node.host_path(path).read_bytes() == b"checkpoint bytes"
    # The node sees the host's write (through the bind mount, not through our host shortcut).
    assert fake_node.exec(["cat", path]) == "checkpoint bytes"
    fake_node.exec(["sh", "-c", "echo from-node > /var/run/cdi/spec.json"])
    assert fake_node.host_path("/var/run/cdi/spec.json").read_text() == "from-node\n"


def test_a_socket_made_on_the_host_is_listed_inside_the_node(fake_node, docker_engine):
    host_dir = fake_node.host_path("/var/lib/kubelet/plugins_registry")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(host_dir / "fake.example.com-reg.sock"))
    try:
        assert fake_node.list_sockets("/var/lib/kubelet/plugins_registry") == ["fake.example.com-reg.sock"]
        # Same node without the host shortcut: `find -type s` inside the container sees it too.
        blind = KindNode(docker_engine, fake_node.name, {}, "1.37.1")
        assert blind.list_sockets("/var/lib/kubelet/plugins_registry") == ["fake.example.com-reg.sock"]
    finally:
        server.close()


def test_kubelet_log_since_mark_shows_the_restart(fake_node):
    mark = fake_node.kubelet.log_mark()
    fake_node.kubelet.restart()
    log = fake_node.kubelet.log_since(mark)
    assert f"fake kubelet v1 started pid {fake_node.kubelet.pid()}" in log
    assert "Stopped kubelet" in log


def test_reboot_simulation_removes_every_sandbox_through_crictl(fake_node):
    fake_node.exec(["sh", "-c", "touch /run/fake/sandboxes/sb-1 /run/fake/sandboxes/sb-2"])
    before = fake_node.kubelet.pid()
    assert fake_node.simulate_reboot() == 2
    assert fake_node.exec(["crictl", "pods", "--quiet"]).split() == []
    assert fake_node.kubelet.pid() not in (0, before)
    assert fake_node.kubelet.healthy()


def test_kubelet_binary_swap_with_docker_cp_and_back(fake_node):
    fake_node.kubelet.stop()
    mark = fake_node.kubelet.log_mark()
    fake_node.kubelet.start(binary=FAKE_KUBELET_V2)
    assert "fake kubelet v2 started" in fake_node.kubelet.log_since(mark)
    fake_node.kubelet.restart()  # a restart keeps the swapped-in binary
    assert fake_node.kubelet.log_since(mark).count("fake kubelet v2 started") == 2
    fake_node.kubelet.stop()
    fake_node.kubelet.start()  # no binary: the node's own kubelet is put back
    assert fake_node.kubelet.log_since(mark).rstrip().splitlines()[-1].startswith("fake kubelet v1 started")
    assert fake_node.exec(["ls", "/usr/bin"]).split().count("kubelet.dc-original") == 0


def test_real_reboot_restarts_the_container_and_keeps_host_directories(fake_node):
    fake_node.write_file("/var/lib/kubelet/device-plugins/keep", b"survives")
    fake_node.exec(["touch", "/run/fake/sandboxes/sb-1"])
    fake_node.reboot(timeout=60)
    assert fake_node.kubelet.healthy()
    assert fake_node.exec(["crictl", "pods", "--quiet"]).split() == []  # /run is a tmpfs: gone
    assert fake_node.read_file("/var/lib/kubelet/device-plugins/keep") == b"survives"
