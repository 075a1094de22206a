"""A real Docker engine for the kind provider's tests, and a fake "node" container to exec into.

No registry is reachable here, so the node is a local image: busybox-static plus small scripts standing
in for systemd, the kubelet, journalctl, crictl and curl (fake_node/). The engine is the user's when
it answers, else a private dockerd started for the session (root + Debian docker.io), else the tests
skip naming what is missing.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from device_conformance.dockercli import Docker
from device_conformance.node.docker import DockerNode

FAKE_NODE_DIR = Path(__file__).with_name("fake_node")
FAKE_NODE_IMAGE = "device-conformance.local/fake-kind-node:test"
BUSYBOX = Path("/bin/busybox")
SCRIPTS = {
    "/usr/local/lib/fake/supervisor": "supervisor",
    "/usr/local/lib/fake/start-kubelet": "start-kubelet",
    "/usr/local/lib/fake/kubelet-alive": "kubelet-alive",
    "/usr/bin/kubelet": "kubelet",
    "/usr/bin/systemctl": "systemctl",
    "/usr/bin/journalctl": "journalctl",
    "/usr/bin/crictl": "crictl",
    "/usr/bin/curl": "curl",
    "/usr/bin/containerd": "containerd",
    "/usr/bin/ctr": "ctr",
}
# Node directories bound from the host, as the kind provider mounts them.
MOUNTED = ("/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins_registry", "/var/run/cdi")


def _add(tar: tarfile.TarFile, path: str, data: bytes | None = None, mode: int = 0o755, link: str = "") -> None:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.mode = mode
    if link:
        info.type, info.linkname = tarfile.SYMTYPE, link
        tar.addfile(info)
    elif data is None:
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    else:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def fake_node_rootfs() -> bytes:
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in (
            "/bin",
            "/usr",
            "/usr/bin",
            "/usr/local",
            "/usr/local/lib",
            "/usr/local/lib/fake",
            "/etc",
            "/var",
            "/var/log",
            "/var/lib",
            "/var/lib/kubelet",
            "/run",
            "/tmp",
            "/kind",
        ):
            _add(tar, directory, mode=0o1777 if directory == "/tmp" else 0o755)
        _add(tar, "/var/run", link="/run")  # as on Debian (kind's nodes): /var/run/cdi lands on the /run tmpfs
        _add(tar, "/bin/busybox", BUSYBOX.read_bytes())
        for applet in applets:
            if applet != "busybox":
                _add(tar, f"/bin/{applet}", link="busybox")
        for target, name in SCRIPTS.items():
            _add(tar, target, (FAKE_NODE_DIR / name).read_bytes())
        _add(tar, "/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
        _add(tar, "/kind/version", b"v0.0.0-fake-node\n", 0o644)
        _add(tar, "/etc/kubernetes")
        _add(tar, "/etc/kubernetes/admin.conf", (FAKE_NODE_DIR / "admin.conf").read_bytes(), 0o600)
    return buffer.getvalue()


def _engine_or_skip() -> Iterator[Docker]:
    default = Docker()
    if shutil.which(default.binary) is None:
        pytest.skip(f"docker CLI ({default.binary}) not installed (`device-conformance setup --provider kind`)")
    if default.answers() is None:
        yield default
        return
    if shutil.which("dockerd") is None:
        pytest.skip("no Docker engine answers and dockerd is not installed (setup --provider kind)")
    if os.geteuid() != 0:
        pytest.skip("no Docker engine answers and starting a private dockerd needs root")
    from device_conformance.providers.kind.dockerd import PrivateDockerd

    engine = PrivateDockerd.start()
    try:
        yield engine.docker
    finally:
        engine.stop()


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[Docker]:
    yield from _engine_or_skip()


@pytest.fixture(scope="session")
def fake_node_image(docker_engine: Docker) -> str:
    if not BUSYBOX.exists():
        pytest.skip(f"the fake node is built from {BUSYBOX} (Debian/Ubuntu package busybox-static)")
    entrypoint = 'ENTRYPOINT ["/usr/local/lib/fake/supervisor"]'  # what `kind create` runs
    docker_engine.run(["import", "--change", entrypoint, "-", FAKE_NODE_IMAGE], stdin=fake_node_rootfs())
    return FAKE_NODE_IMAGE


def run_fake_node(docker: Docker, image: str, name: str, mounts: dict[str, Path], labels: dict[str, str]) -> None:
    argv = ["run", "-d", "--init", "--network", "none", "--tmpfs", "/run", "--name", name, "--hostname", name]
    for node_dir, host_dir in mounts.items():
        argv += ["--volume", f"{host_dir}:{node_dir}"]
    for key, value in labels.items():
        argv += ["--label", f"{key}={value}"]
    docker.run([*argv, image])


@pytest.fixture
def start_fake_node(docker_engine: Docker, fake_node_image: str):
    """start_fake_node(name, mounts, labels): a fake node container (removed by the caller)."""
    return lambda name, mounts, labels: run_fake_node(docker_engine, fake_node_image, name, mounts, labels)


@pytest.fixture
def fake_node(docker_engine: Docker, fake_node_image: str) -> Iterator[DockerNode]:
    """A running fake node container with per-node host directories bound like kind's extraMounts."""
    # Short host root: sockets in these directories must stay under 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="dck-", dir="/tmp"))
    mounts = {node_dir: root / Path(node_dir).name for node_dir in MOUNTED}
    for host_dir in mounts.values():
        host_dir.mkdir()
    name = f"dc-fake-node-{uuid.uuid4().hex[:6]}"
    node = DockerNode(docker_engine, name, mounts, "1.37.1")
    try:
        run_fake_node(docker_engine, fake_node_image, name, mounts, {})
        node.wait_kubelet_healthy(timeout=30)
        yield node
    finally:
        docker_engine.run(["rm", "-f", "-v", name], check=False)
        shutil.rmtree(root, ignore_errors=True)


# -- a node with the real systemd and journald -------------------------------------------------
# kind's nodes run the kubelet as a systemd unit. This host has Debian's systemd 252 installed (not as
# PID 1), so a container whose /usr is the host's /usr (read-only) boots the real systemd, with a
# kubelet.service like kind's (Restart=always, RestartSec=1s, KillMode=process) around a stand-in
# kubelet. DockerNode's systemctl/journalctl/kill/file calls then meet the real tools.
SYSTEMD = Path("/usr/lib/systemd/systemd")
SYSTEMD_NODE_IMAGE = "device-conformance.local/systemd-node:test"
KUBELET_UNIT = b"""[Unit]
Description=stand-in kubelet (unit settings as kind's kubelet.service)
[Service]
ExecStart=/opt/kubelet
Restart=always
StartLimitInterval=0
RestartSec=1s
KillMode=process
[Install]
WantedBy=multi-user.target
"""
STAND_IN_KUBELET = b"""#!/bin/sh
echo "stand-in kubelet started pid $$"
mkdir -p /run/www && echo ok > /run/www/healthz
exec busybox httpd -f -p 127.0.0.1:10248 -h /run/www
"""


def systemd_node_rootfs() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in (
            "/usr",
            "/etc",
            "/etc/systemd",
            "/etc/systemd/system",
            "/var",
            "/var/lib",
            "/var/lib/kubelet",
            "/var/log",
            "/var/tmp",
            "/run",
            "/tmp",
            "/root",
            "/kind",
            "/opt",
            "/etc/systemd/system/multi-user.target.wants",
        ):
            _add(tar, directory, mode=0o1777 if directory in ("/tmp", "/var/tmp") else 0o755)
        for link, target in (
            ("/bin", "usr/bin"),
            ("/lib", "usr/lib"),
            ("/lib64", "usr/lib64"),
            ("/sbin", "usr/sbin"),
            ("/var/run", "/run"),
        ):
            _add(tar, link, link=target)
        _add(tar, "/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
        _add(tar, "/etc/group", b"root:x:0:\nsystemd-journal:x:999:\n", 0o644)
        _add(tar, "/etc/machine-id", b"", 0o444)
        _add(tar, "/kind/version", b"v1.37.1\n", 0o644)
        _add(tar, "/opt/kubelet", STAND_IN_KUBELET)  # not under /usr: that is the host's, read-only
        _add(tar, "/etc/systemd/system/kubelet.service", KUBELET_UNIT, 0o644)
        _add(
            tar,
            "/etc/systemd/system/multi-user.target.wants/kubelet.service",
            link="/etc/systemd/system/kubelet.service",
        )
    return buffer.getvalue()


@pytest.fixture(scope="session")
def systemd_node_image(docker_engine: Docker) -> str:
    if Path("/sys/fs/cgroup/cgroup.controllers").exists():
        pytest.skip("the systemd node is set up for cgroup v1 hosts (like this project's); cgroup v2 is untested")
    missing = [str(p) for p in (SYSTEMD, Path("/usr/bin/busybox"), Path("/usr/bin/curl")) if not p.exists()]
    if missing or not Path("/bin").is_symlink():
        pytest.skip(f"a systemd node needs a merged-/usr host with {', '.join(missing) or 'merged /usr'}")
    docker_engine.run(["import", "-", SYSTEMD_NODE_IMAGE], stdin=systemd_node_rootfs())
    return SYSTEMD_NODE_IMAGE


@pytest.fixture
def systemd_node(docker_engine: Docker, systemd_node_image: str) -> Iterator[DockerNode]:
    root = Path(tempfile.mkdtemp(prefix="dck-", dir="/tmp"))
    mounts = {node_dir: root / Path(node_dir).name for node_dir in MOUNTED}
    for host_dir in mounts.values():
        host_dir.mkdir()
    name = f"dc-systemd-node-{uuid.uuid4().hex[:6]}"
    argv = [
        "run", "-d", "--name", name, "--hostname", name, "--network", "none",
        "--tmpfs", "/run", "--tmpfs", "/run/lock", "--tmpfs", "/tmp", "--volume", "/usr:/usr:ro",
        "--volume", "/sys/fs/cgroup:/sys/fs/cgroup:ro", "--cap-add", "SYS_ADMIN", "--env", "container=docker",
        "--stop-signal", "SIGRTMIN+3",
    ]  # fmt: skip
    for node_dir, host_dir in mounts.items():
        argv += ["--volume", f"{host_dir}:{node_dir}"]
    node = DockerNode(docker_engine, name, mounts, "1.37.1")
    try:
        docker_engine.run([*argv, systemd_node_image, "/usr/lib/systemd/systemd"])
        node.wait_kubelet_healthy(timeout=60)
        yield node
    finally:
        docker_engine.run(["rm", "-f", "-v", name], check=False)
        shutil.rmtree(root, ignore_errors=True)
