"""What the local provider needs from the host, checked before anything starts."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.host.process import run
from device_conformance.providers.local.configs import CNI_BIN_DIR

# command (or absolute path) -> Debian package that provides it. containerd is not here: Debian's
# 1.6 has no CDI, so containerd 2.x is built from the Go module proxy (toolchain/containerd.py).
REQUIRED = {
    "runc": "runc",
    "etcd": "etcd-server",
    f"{CNI_BIN_DIR}/bridge": "containernetworking-plugins",
    f"{CNI_BIN_DIR}/host-local": "containernetworking-plugins",
    f"{CNI_BIN_DIR}/loopback": "containernetworking-plugins",
    "/bin/busybox": "busybox-static",
    "unshare": "util-linux",
    "nsenter": "util-linux",
    "ip": "iproute2",
    "gcc": "gcc",
}


def missing_packages() -> list[str]:
    missing = set()
    for command, package in REQUIRED.items():
        found = Path(command).exists() if command.startswith("/") else shutil.which(command)
        if not found:
            missing.add(package)
    return sorted(missing)


def preflight() -> None:
    """Raise BadInput naming the fix when this host cannot run a local cluster."""
    if os.geteuid() != 0:
        raise BadInput(
            "the local provider runs etcd, containerd and a kubelet, which needs root",
            "run as root (e.g. `sudo make e2e`), or use PROVIDER=kind / PROVIDER=existing",
        )
    packages = missing_packages()
    if packages:
        raise BadInput(
            f"missing Debian packages for the local provider: {', '.join(packages)}",
            f"run `make setup` (or: apt-get install -y {' '.join(packages)})",
        )


def install_missing_packages() -> list[str]:
    """apt-get install whatever is missing (used by `device-conformance setup`); returns what was installed."""
    packages = missing_packages()
    if packages:
        env = {"DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-qq"], env=env, timeout=600)
        run(["apt-get", "install", "-y", "-qq", *packages], env=env, timeout=1200)
    return packages
