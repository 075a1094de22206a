"""The private dockerd for real: privileged containers through the runc wrapper, kind's network, cleanup."""

from __future__ import annotations

import io
import os
import shutil
import tarfile
from pathlib import Path

import pytest

from device_conformance.providers.kind.dockerd import (
    KIND_NETWORK,
    OWNER_LABEL,
    PrivateDockerd,
    host_missing_capabilities,
)

pytestmark = [
    pytest.mark.docker,
    pytest.mark.skipif(shutil.which("dockerd") is None, reason="dockerd not installed (setup --provider kind)"),
    pytest.mark.skipif(os.geteuid() != 0, reason="starting a dockerd needs root"),
]
BUSYBOX = Path("/bin/busybox")
IMAGE = "dc-busybox:privileged-test"
MOUNT_TMPFS = "/bin/busybox mount -t tmpfs proof /mnt && /bin/busybox grep ' /mnt ' /proc/mounts"


def busybox_rootfs() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        data = BUSYBOX.read_bytes()
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        for directory in ("mnt", "proc", "sys", "dev", "tmp"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
    return buffer.getvalue()


def leftovers(engine: PrivateDockerd) -> list[str]:
    found = []
    if engine.root.exists():
        found.append(str(engine.root))
    mounts = Path("/proc/self/mounts").read_text()
    if str(engine.root) in mounts:
        found.append("mounts under the root")
    for hierarchy in Path("/sys/fs/cgroup").iterdir():
        if (hierarchy / engine.cgroup_parent.lstrip("/")).exists():
            found.append(f"cgroup {hierarchy.name}{engine.cgroup_parent}")
    marker = str(engine.root).encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker in (entry / "cmdline").read_bytes():
                    found.append(f"process {entry.name}")
            except OSError:
                pass
    return found


@pytest.mark.skipif(not BUSYBOX.exists(), reason="needs /bin/busybox (busybox-static)")
def test_privileged_run_and_exec_mount_a_tmpfs_through_the_wrapper():
    engine = PrivateDockerd.start(kind_network=True)
    try:
        docker = engine.docker
        assert engine.wrapped == host_missing_capabilities()
        docker.run(["import", "-", IMAGE], stdin=busybox_rootfs())
        run = docker.run(["run", "--rm", "--privileged", "--network", KIND_NETWORK, IMAGE, "/bin/busybox", "sh", "-c",
                          MOUNT_TMPFS], check=False)  # fmt: skip
        assert (run.returncode, run.stdout.decode()) == (0, "proof /mnt tmpfs rw,relatime 0 0\n"), run.stderr
        docker.run(["run", "-d", "--name", "dc-priv", "--privileged", IMAGE, "/bin/busybox", "sleep", "300"])
        exec_ = docker.run(["exec", "--privileged", "dc-priv", "/bin/busybox", "sh", "-c", MOUNT_TMPFS], check=False)
        assert (exec_.returncode, exec_.stdout.decode()) == (0, "proof /mnt tmpfs rw,relatime 0 0\n"), exec_.stderr
        network = docker.text(
            [
                "network",
                "inspect",
                KIND_NETWORK,
                "--format",
                '{{.Driver}} {{.EnableIPv6}} {{index .Labels "' + OWNER_LABEL + '"}}',
            ]
        ).strip()
        assert network == "bridge false 1"
        bridge = "br-" + docker.text(["network", "inspect", KIND_NETWORK, "--format", "{{.Id}}"]).strip()[:12]
        assert Path("/sys/class/net", bridge).exists()
    finally:
        engine.stop()
    assert leftovers(engine) == []
    assert not Path("/sys/class/net", bridge).exists()


@pytest.mark.skipif(not host_missing_capabilities(), reason="this host's bounding set has every capability")
@pytest.mark.skipif(not BUSYBOX.exists(), reason="needs /bin/busybox (busybox-static)")
def test_without_the_wrapper_privileged_containers_fail_here():
    """Why the wrapper exists: the same container, straight on runc, cannot start on this host."""
    engine = PrivateDockerd.start(wrap=False)
    try:
        assert engine.wrapped == []
        engine.docker.run(["import", "-", IMAGE], stdin=busybox_rootfs())
        run = engine.docker.run(["run", "--rm", "--privileged", IMAGE, "/bin/busybox", "true"], check=False)
        assert run.returncode != 0
        assert "unable to apply caps" in run.stderr.decode()
    finally:
        engine.stop()
    assert leftovers(engine) == []
