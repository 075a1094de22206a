"""What kind needs per Kubernetes version: the minimum kind release and the node image to use.

Data only; each entry names its upstream source.
"""

from __future__ import annotations

import re

from device_conformance.expectations.versions import KubeVersion

# The newest kind on the Go module proxy when this was written (checked: v0.33.0, 2026-08-27).
# `device-conformance setup --provider kind` installs it only when no usable kind is on PATH.
KIND_INSTALL_VERSION = "v0.33.0"

# Node images whose digest kind itself pins (sigs.k8s.io/kind v0.33.0 pkg/apis/config/defaults/image.go).
# Other versions use the tag kindest/node:vX.Y.Z; kind's release notes list which tags exist.
PINNED_NODE_IMAGES = {
    "1.37.0": "kindest/node:v1.37.0@sha256:a1ed56cfb0e7b93589bdf97c8cd566405a265939e3620fc4f5de89adff580ae5",
}

# Node images published with kind v0.33.0 (github.com/kubernetes-sigs/kind/releases/tag/v0.33.0). Tags for other patch
# releases may not exist: `kind build node-image` makes one where a registry and sources are reachable.
PUBLISHED_WITH_KIND = {"v0.33.0": ("1.37.0", "1.36.4", "1.35.8", "1.34.11")}


def minimum_kind(version: KubeVersion) -> tuple[int, int, int]:
    """The oldest kind release that can create (and `kind load` into) clusters of `version`."""
    if version.at_least(36):
        # kind v0.32.0 switched to kubeadm v1beta4 for >= 1.36 (kubeadm 1.37 refuses v1beta3; kr8s#769),
        # and node images built for 1.36+ ship a containerd that only kind >= 0.32 can `kind load` into.
        return (0, 32, 0)
    if version.at_least(35):
        return (0, 31, 0)  # first release with 1.35 node images (v0.31.0, 2025-12-17)
    return (0, 30, 0)


def image_version(image: str) -> KubeVersion | None:
    """The Kubernetes version in a kindest/node-style tag (`...:v1.37.0[@sha256:...]`), if there is one."""
    match = re.search(r":(v\d+\.\d+\.\d+(?:-(?:alpha|beta|rc)\.\d+)?)(?:@|$)", image)
    return KubeVersion.parse(match.group(1)) if match else None


def default_node_image(version: KubeVersion) -> str:
    return PINNED_NODE_IMAGES.get(str(version), f"kindest/node:{version.tag}")
