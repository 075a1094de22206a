"""A real Docker engine for the kind provider's tests, and a fake "node" container to exec into.

No registry is reachable here, so nodes are local images (node_images.py): a busybox fake node and a
node running the host's real systemd. The engine is the user's when it answers, else a private dockerd
started for the session (root + Debian docker.io), else the tests skip naming what is missing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# This folder is on sys.path (pytest's default prepend import mode; tests/README.md).
from node_images import (
    BUSYBOX,
    FAKE_NODE_IMAGE,
    MOUNTED,
    SYSTEMD,
    SYSTEMD_NODE_IMAGE,
    fake_node_rootfs,
    systemd_node_rootfs,
)

from device_conformance.host.dockercli import Docker
from device_conformance.providers.kind.node import KindNode


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
def fake_node(docker_engine: Docker, fake_node_image: str) -> Iterator[KindNode]:
    """A running fake node container with per-node host directories bound like kind's extraMounts."""
    # Short host root: sockets in these directories must stay under 107 bytes.
    root = Path(tempfile.mkdtemp(prefix="dck-", dir="/tmp"))
    mounts = {node_dir: root / Path(node_dir).name for node_dir in MOUNTED}
    for host_dir in mounts.values():
        host_dir.mkdir()
    name = f"dc-fake-node-{uuid.uuid4().hex[:6]}"
    node = KindNode(docker_engine, name, mounts, "1.37.1")
    try:
        run_fake_node(docker_engine, fake_node_image, name, mounts, {})
        node.kubelet.wait_healthy(timeout=30)
        yield node
    finally:
        docker_engine.run(["rm", "-f", "-v", name], check=False)
        shutil.rmtree(root, ignore_errors=True)


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
def systemd_node(docker_engine: Docker, systemd_node_image: str) -> Iterator[KindNode]:
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
    node = KindNode(docker_engine, name, mounts, "1.37.1")
    try:
        docker_engine.run([*argv, systemd_node_image, "/usr/lib/systemd/systemd"])
        node.kubelet.wait_healthy(timeout=60)
        yield node
    finally:
        docker_engine.run(["rm", "-f", "-v", name], check=False)
        shutil.rmtree(root, ignore_errors=True)
