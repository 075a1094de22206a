"""What the kind provider needs from the host, installed by `device-conformance setup --provider kind`."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable

from device_conformance.dockercli import Docker
from device_conformance.errors import BadInput
from device_conformance.process import run

# Debian's Docker engine (dockerd + containerd + runc); the CLI alone is not enough.
DOCKER_PACKAGE = "docker.io"


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
