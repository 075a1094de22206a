"""What the kind provider needs from the host, installed by `device-conformance setup --provider kind`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.host.dockercli import Docker
from device_conformance.host.process import run

# Debian's Docker engine (dockerd + containerd + runc); the CLI alone is not enough.
DOCKER_PACKAGE = "docker.io"

# command (or absolute path) -> Debian package, for building our node image (toolchain/nodeimage/): debootstrap
# makes its root filesystem (rootfs.py), gcc and busybox-static its small static helpers and images (as the
# local provider's REQUIRED). A fresh machine has none of them until setup installs them.
NODE_IMAGE_REQUIRED = {
    "debootstrap": "debootstrap",
    "gcc": "gcc",
    "/bin/busybox": "busybox-static",
}


def missing_node_image_packages() -> list[str]:
    missing = set()
    for command, package in NODE_IMAGE_REQUIRED.items():
        found = Path(command).exists() if command.startswith("/") else shutil.which(command)
        if not found:
            missing.add(package)
    return sorted(missing)


def install_node_image_packages(progress: Callable[[str], None] = print) -> list[str]:
    """apt-get install what building the node image needs and is missing; returns what was installed."""
    packages = missing_node_image_packages()
    if not packages:
        return []
    if os.geteuid() != 0:
        raise BadInput(
            f"building the kind node image needs {', '.join(packages)} and installing them needs root",
            f"sudo apt-get install -y {' '.join(packages)}",
        )
    progress(f"installing {', '.join(packages)} (apt-get; the node image build needs them)")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    run(["apt-get", "update", "-qq"], env=env, timeout=600)
    run(["apt-get", "install", "-y", "-qq", *packages], env=env, timeout=1200)
    return packages


def engine_missing(docker: Docker) -> bool:
    """True when no engine answers and none is installed (a stopped engine is the user's to start)."""
    return docker.answers() is not None and shutil.which("dockerd") is None


def install_docker_engine(docker: Docker, progress: Callable[[str], None] = print) -> bool:
    """apt-get install docker.io when no Docker engine is present; returns whether it installed."""
    if not engine_missing(docker):
        return False
    if os.geteuid() != 0:
        raise BadInput(
            "no Docker engine is installed and installing one needs root", f"sudo apt-get install {DOCKER_PACKAGE}"
        )
    progress(f"installing {DOCKER_PACKAGE} (apt-get)")
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    run(["apt-get", "update", "-qq"], env=env, timeout=600)
    run(["apt-get", "install", "-y", "-qq", DOCKER_PACKAGE], env=env, timeout=1200)
    return True
