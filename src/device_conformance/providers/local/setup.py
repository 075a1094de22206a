"""`device-conformance setup --provider local`: Debian packages, Kubernetes and containerd binaries, images; no
cluster (settings.PROVIDER_CAPABILITIES["local"].setup)."""

from __future__ import annotations

import os

from device_conformance.providers.local import host
from device_conformance.settings import Settings
from device_conformance.toolchain.binaries import KUBELET_ONLY, ensure_binaries
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.containerd import ensure_containerd
from device_conformance.toolchain.images.build import build_images


def from_settings(settings: Settings, *, install_packages: bool = True) -> int:
    version = settings.k8s_version.value
    if install_packages:
        if os.geteuid() != 0 and host.missing_packages():
            host.preflight()  # raises the "needs root" error with its fix
        installed = host.install_missing_packages()
        print(f"Debian packages: {'installed ' + ', '.join(installed) if installed else 'all present'}")
    binaries = ensure_binaries(
        version, user_dir=settings.k8s_bin_dir.value, source_tree=settings.k8s_source.value, progress=print
    )
    print(f"Kubernetes {version.tag}: {binaries.directory} ({binaries.source})")
    kubelet = settings.kubelet_version.value
    if kubelet != version:
        skewed = ensure_binaries(kubelet, components=KUBELET_ONLY, progress=print)
        print(f"kubelet {kubelet.tag} (KUBELET_VERSION, the node's): {skewed.directory} ({skewed.source})")
    ensure_upgrade_kubelet(settings)
    containerd = ensure_containerd(settings.containerd_version.value, progress=print)
    print(f"containerd {containerd.version}: {containerd.directory} ({containerd.source})")
    for image in build_images(cache_root() / "images"):
        print(f"image {image.name}: {image.tarball}")
    return 0


def ensure_upgrade_kubelet(settings: Settings) -> None:
    """The upgrade tests' starting kubelet (one minor below), so a fresh machine has it before the suite.

    Only the kubelet: upgrade tests swap the kubelet alone, and it builds several times faster than all four."""
    previous, version = settings.upgrade_from.value, settings.kubelet_version.value
    if not previous.previous_minor_of(version):
        print(f"upgrade tests: {previous} is not one minor below {version}; set UPGRADE_FROM to build theirs")
        return
    binaries = ensure_binaries(previous, components=KUBELET_ONLY, progress=print)
    print(f"kubelet {previous.tag} (upgrade tests start from it): {binaries.directory} ({binaries.source})")
