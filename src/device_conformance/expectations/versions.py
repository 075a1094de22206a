"""Kubernetes versions: parsing, ordering, and the default this suite tests."""

from __future__ import annotations

import re
from dataclasses import dataclass

from device_conformance.errors import BadInput

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")
# What a cluster reports (kubeletVersion, /version gitVersion) may carry a suffix: v1.37.1-gke.100, v1.37.1+k3s1.
_REPORTED_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:[-+].*)?$")


@dataclass(frozen=True, order=True)
class KubeVersion:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> KubeVersion:
        """A release version as a user writes it: MAJOR.MINOR.PATCH, with or without a leading v."""
        match = _VERSION_RE.match(text.strip())
        if not match:
            raise BadInput(
                f"{text!r} is not a Kubernetes release version",
                f"use MAJOR.MINOR.PATCH, e.g. {DEFAULT_K8S_VERSION}",
            )
        major, minor, patch = (int(part) for part in match.groups())
        return cls(major, minor, patch)

    @classmethod
    def from_reported(cls, text: str) -> KubeVersion:
        """A version as a cluster reports it (v1.37.1, v1.37.1-gke.100, v1.38.0-alpha.1): the release part."""
        match = _REPORTED_RE.match(text.strip())
        if not match:
            raise BadInput(
                f"the cluster reports version {text!r}, which is not a Kubernetes version",
                "point the suite at a cluster running a Kubernetes release (vMAJOR.MINOR.PATCH)",
            )
        major, minor, patch = (int(part) for part in match.groups())
        return cls(major, minor, patch)

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def tag(self) -> str:
        """The git tag / Go module version of k8s.io/kubernetes, e.g. v1.37.1."""
        return f"v{self}"

    @property
    def staging_tag(self) -> str:
        """The Go module version of the staging modules (k8s.io/api etc.), e.g. v0.37.1."""
        return f"v0.{self.minor}.{self.patch}"

    def previous_minor_of(self, other: KubeVersion) -> bool:
        """True when this is a release of the minor just below `other` (what upgrade tests start from)."""
        return (self.major, self.minor) == (other.major, other.minor - 1)

    def at_least(self, minor: int) -> bool:
        """True for 1.<minor> and later (all our rules are about 1.x minors)."""
        return (self.major, self.minor) >= (1, minor)


# The newest release whose module zip the Go module proxy serves on our machines: k8s.io/kubernetes
# v1.37.2 answers "403 This module version is not available", v1.37.1 builds. See README.md.
DEFAULT_K8S_VERSION = KubeVersion(1, 37, 1)
# The previous minor, for kubelet upgrade tests: the newest 1.36 patch that builds here. The proxy lists
# v1.36.5 but its checksum database answers 404 for it, so `go` refuses it; v1.36.4 verifies.
PREVIOUS_MINOR_VERSION = KubeVersion(1, 36, 4)

# How many minors a kubelet may be older than kube-apiserver: three since 1.28 (KEP-3935, "Support
# kubelet up to 3 minors older than kube-apiserver"; kubernetes.io/releases/version-skew-policy). Never newer.
KUBELET_SKEW_MINORS = 3


def kubelet_skew_allows(control_plane: KubeVersion, kubelet: KubeVersion) -> bool:
    """Whether a kubelet of this release may run under this control plane (never newer, at most
    KUBELET_SKEW_MINORS minors older)."""
    return kubelet <= control_plane and control_plane.minor - kubelet.minor <= KUBELET_SKEW_MINORS


# The version matrix (`make matrix`): for each minor 1.31-1.37 the newest patch that builds here: the Go
# module proxy serves k8s.io/kubernetes and every staging module k8s.io/<name>@v0.Y.Z its go.mod replaces,
# and the checksum database has an entry (probed 2026-11-23 via proxy.golang.org/<module>/@v/<v>.zip and
# /sumdb/sum.golang.org/lookup/...). Newer patches are refused: 1.34.11-1.34.12, 1.35.9 and 1.36.5 have no
# checksum entry; k8s.io/endpointslice answers 403 for v0.31.5-v0.31.12, v0.31.14 and v0.32.7+ and has no
# checksum entry for v0.31.13, so 1.31.5-1.31.14 and 1.32.7+ fail to build; 1.33.14+ answer 403.
MATRIX_VERSIONS: tuple[KubeVersion, ...] = (
    KubeVersion(1, 31, 4),
    KubeVersion(1, 32, 5),
    KubeVersion(1, 33, 13),
    KubeVersion(1, 34, 10),
    KubeVersion(1, 35, 8),
    PREVIOUS_MINOR_VERSION,
    DEFAULT_K8S_VERSION,
)

# Below the matrix: the newest patch of 1.28-1.30, each its minor's last release (the proxy answers 403 for
# k8s.io/kubernetes v1.28.16, v1.29.16 and v1.30.15). k8s.io/kubernetes and every staging module at these versions
# download, verify against sum.golang.org (GOSUMDB on, go.sum written by the build) and build with go1.26.8
# (2026-11-24). They run the device-plugin and smoke suites
# only: every DRA test skips (1.27-1.30 serve only resource.k8s.io/v1alpha2, classic DRA, which the suites'
# objects do not fit; FIRST_DRA_MINOR) and every taints test (FIRST_DEVICE_TAINTS_MINOR), so they are not in
# `make matrix`; `device-conformance matrix --versions 1.28.15,1.29.15,1.30.14` runs them (README.md).
OLDER_VERSIONS: tuple[KubeVersion, ...] = (
    KubeVersion(1, 28, 15),
    KubeVersion(1, 29, 15),
    KubeVersion(1, 30, 14),
)
