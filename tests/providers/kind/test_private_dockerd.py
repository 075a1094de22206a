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


INNER_TEST = """
import io, os, subprocess, tarfile, time
from pathlib import Path

from device_conformance.host.dockercli import Docker


def test_hold():
    docker = Docker()  # DOCKER_HOST: the session's private dockerd
    docker.run(["import", "-", "dc-hold:1"], stdin=Path(os.environ["ROOTFS"]).read_bytes())
    docker.run(["run", "-d", "--privileged", "--network", "kind", "--volume", "/data", "dc-hold:1",
                "/bin/busybox", "sleep", "600"])
    Path(os.environ["READY"]).write_text(os.environ["DOCKER_HOST"])
    time.sleep(600)
"""


@pytest.mark.skipif(not BUSYBOX.exists(), reason="needs /bin/busybox (busybox-static)")
@pytest.mark.parametrize("stop", ["ctrl-c", "sigterm"])
def test_the_session_engine_goes_with_everything_in_it_when_the_run_is_interrupted(tmp_path, stop):
    """The pytest controller owns the private dockerd: interrupted with a container (privileged, on the
    kind network, with a volume) running, it leaves no engine, directory, process, bridge or cgroup."""
    import signal
    import subprocess
    import sys

    from device_conformance.host.dockercli import Docker
    from device_conformance.wait.core import until

    if Docker().answers() is None:
        pytest.skip("a Docker engine answers: the session starts no private one")
    (tmp_path / "test_hold.py").write_text(INNER_TEST)
    (tmp_path / "rootfs.tar").write_bytes(busybox_rootfs())
    ready = tmp_path / "ready"
    env = {**os.environ, "ROOTFS": str(tmp_path / "rootfs.tar"), "READY": str(ready)}
    env.pop("DOCKER_HOST", None)
    argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s", "--provider", "kind"]
    # A user-chosen node image: the session loads nothing (no cluster is made here anyway).
    argv += ["--kind-image", "example.invalid/node:v1"]
    inner = subprocess.Popen(
        argv,
        cwd=tmp_path,
        env=env,
        start_new_session=True,
        stdout=subprocess.PIPE,
        text=True,
        # Ctrl-C must reach it also when this pytest was started in the background (SIGINT ignored, inherited).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        until(
            lambda: (ready.exists() or inner.poll() is not None) or None, what="the inner run's container", timeout=120
        )
        assert ready.exists(), inner.communicate(timeout=30)[0]
        host = ready.read_text()
        root = Path(host.removeprefix("unix://")).parent
        engine = PrivateDockerd(root, None, f"/{root.name}", [])
        bridge = "br-" + Docker(host=host).text(["network", "inspect", "kind", "--format", "{{.Id}}"]).strip()[:12]
        assert Path("/sys/class/net", bridge).exists()
        if stop == "ctrl-c":
            os.killpg(inner.pid, signal.SIGINT)  # what a terminal sends to the foreground group
        else:
            inner.send_signal(signal.SIGTERM)
        output = inner.communicate(timeout=180)[0]
    finally:
        if inner.poll() is None:
            os.killpg(inner.pid, signal.SIGKILL)
            inner.wait()
            PrivateDockerd.cleanup_stale()  # the engine of the session this test had to kill: never left running
    assert "stopping the private dockerd" in output, output
    assert leftovers(engine) == []
    assert not Path("/sys/class/net", bridge).exists()
