"""The node's Debian root filesystem: debootstrap of kind's base suite with the packages kind's base
Dockerfile installs, then the systemd trimming that Dockerfile does. Cached as one tarball per
(suite, packages, recipe); it is the lower part of every node image built on it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.host.process import run
from device_conformance.toolchain.cache import Progress, ensure_cached
from device_conformance.toolchain.nodeimage.cache import entry, record_inputs
from device_conformance.toolchain.nodeimage.kindbase import BaseRecipe

MIRROR = "http://deb.debian.org/debian"
# Not in kind's list, which builds runc from source (its Dockerfile's build-runc stage): runc needs cgo and
# libseccomp, so Debian's runc is used, the one the local provider uses too. cri-tools (crictl) is
# Debian's package where the suite has one (sigs.k8s.io/cri-tools is not on the Go module proxy).
EXTRA_PACKAGES = ("runc",)
OPTIONAL_PACKAGES = ("cri-tools",)
# Bump when the steps below change, so cached root filesystems are rebuilt.
RECIPE = "1"
TARBALL = "rootfs.tar"
DEBOOTSTRAP_TIMEOUT = 3600

# kind's images/base/Dockerfile, base stage, after clean-install (run in the chroot, verbatim in spirit):
# no tmpfiles at boot, no services but those enabled later, no kmsg in journald, systemd as /sbin/init.
SYSTEMD_TRIM = """set -e
find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
rm -f /lib/systemd/system/multi-user.target.wants/*
rm -f /etc/systemd/system/*.wants/*
rm -f /lib/systemd/system/local-fs.target.wants/*
rm -f /lib/systemd/system/sockets.target.wants/*udev*
rm -f /lib/systemd/system/sockets.target.wants/*initctl*
rm -f /lib/systemd/system/basic.target.wants/*
echo "ReadKMsg=no" >> /etc/systemd/journald.conf
ln -sf /usr/lib/systemd/systemd /sbin/init
"""
# kind's files/usr/local/bin/clean-install cleanup.
CLEANUP = """set -e
apt-get clean -y
rm -rf /var/cache/debconf/* /var/lib/apt/lists/* /var/log/* /tmp/* /var/tmp/* /usr/share/doc/* \
  /usr/share/doc-base/* /usr/share/man/* /usr/share/local/*
"""


def rootfs_inputs(recipe: BaseRecipe) -> dict[str, object]:
    return {
        "suite": recipe.debian_suite,
        "mirror": MIRROR,
        "packages": sorted({*recipe.packages, *EXTRA_PACKAGES}),
        "optional": list(OPTIONAL_PACKAGES),
        "recipe": RECIPE,
    }


def ensure_rootfs(recipe: BaseRecipe, progress: Progress = print) -> Path:
    """The root filesystem tarball for `recipe` (debootstrap when not cached: a few minutes)."""
    inputs = rootfs_inputs(recipe)
    cached = entry("rootfs", inputs)

    def fill(staging: Path) -> str:
        root = staging / "root"
        try:
            debootstrap(recipe.debian_suite, inputs["packages"], root, progress)  # type: ignore[arg-type]
            for package in OPTIONAL_PACKAGES:
                install_if_available(root, package, progress)
            chroot_sh(root, SYSTEMD_TRIM)
            chroot_sh(root, CLEANUP)
        finally:
            # debootstrap mounts proc and sys in the target and a killed one leaves them: never rm -r through them.
            unmount_under(root)
        progress("packing the root filesystem")
        pack(root, staging / TARBALL)
        shutil.rmtree(root)
        record_inputs(staging, inputs)
        return "debootstrap"

    ensure_cached(cached, (TARBALL,), fill, progress)
    return cached / TARBALL


def debootstrap(suite: str, packages: list[str], root: Path, progress: Progress) -> None:
    tool = shutil.which("debootstrap")
    if tool is None:
        raise BadInput(
            "debootstrap is not installed (it makes the node image's root filesystem)", "apt-get install -y debootstrap"
        )
    progress(f"debootstrap {suite} with {len(packages)} packages from {MIRROR} (a few minutes)")
    argv = [tool, "--variant=minbase", f"--include={','.join(packages)}", "--components=main", suite, str(root), MIRROR]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        tail: list[str] = []
        for line in proc.stdout:
            tail = [*tail, line.rstrip()][-30:]
            # debootstrap prints I: Retrieving/Validating/Unpacking/Configuring per package: report the phases.
            if line.startswith("I: ") and not line.startswith(
                ("I: Retrieving", "I: Validating", "I: Unpacking ", "I: Configuring ")
            ):
                progress("  " + line.strip())
    if proc.returncode != 0:
        raise BadInput(
            f"debootstrap {suite} failed (exit {proc.returncode}):\n" + "\n".join(tail), f"check access to {MIRROR}"
        )


def install_if_available(root: Path, package: str, progress: Progress) -> bool:
    """apt-get install `package` in the chroot when the suite has it; False (said) when it has not."""
    chroot_sh(root, "apt-get update -qq")
    known = run(["chroot", str(root), "apt-cache", "show", package], check=False, timeout=120)
    if known.returncode != 0:
        progress(f"  {package} is not in the Debian suite: the node image has no {package}")
        return False
    chroot_sh(root, f"DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {package}")
    progress(f"  installed {package} from Debian")
    return True


def unmount_under(directory: Path) -> list[str]:
    """Unmount (lazily, deepest first) whatever is mounted at or below `directory`; returns the targets."""
    prefix = str(directory.resolve())
    targets = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        target = line.split()[1].replace("\\040", " ")
        if target == prefix or target.startswith(prefix + "/"):
            targets.append(target)
    for target in sorted(targets, key=len, reverse=True):
        subprocess.run(["umount", "-l", target], check=False, capture_output=True)
    return sorted(targets, key=len, reverse=True)


def chroot_sh(root: Path, script: str) -> str:
    return run(["chroot", str(root), "/bin/sh", "-c", script], timeout=DEBOOTSTRAP_TIMEOUT).stdout


def pack(root: Path, tarball: Path) -> None:
    """Tar `root` with numeric owners, file capabilities, no device nodes (docker gives /dev its own)."""
    run(
        ["tar", "--numeric-owner", "--xattrs", "--xattrs-include=security.capability", "--sort=name",
         "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "-C", str(root), "-cf", str(tarball), "."],
        timeout=1800,
    )  # fmt: skip
