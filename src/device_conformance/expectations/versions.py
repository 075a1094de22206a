"""Kubernetes versions: parsing, ordering, and the default this suite tests.

Besides releases (1.37.1) a version may be a pre-release tag of upstream's (1.38.0-alpha.1, -beta.0, -rc.1),
ordered as the tags are: 1.38.0-alpha.1 < 1.38.0-alpha.2 < 1.38.0-beta.0 < 1.38.0-rc.0 < 1.38.0 < 1.38.1
(semver.org precedence, which upstream's release tooling follows: kubernetes/release pkg/release).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from device_conformance.core.errors import BadInput

# Upstream's pre-release kinds, in release order (kubernetes/release: alpha tags on master, then beta and rc).
PRE_RELEASE_KINDS = ("alpha", "beta", "rc")
_PRE = r"(alpha|beta|rc)\.(\d+)"
_VERSION_RE = re.compile(rf"^v?(\d+)\.(\d+)\.(\d+)(?:-{_PRE})?$")
_PRE_RE = re.compile(rf"^{_PRE}$")
# What a cluster or a source tree reports may carry a suffix: v1.37.1-gke.100, v1.37.1+k3s1 (vendor builds of
# a release), v1.38.0-beta.0 (a tag), v1.39.0-alpha.0-123+0123456789abcd or v1.39.0-alpha.0.123+0123456789abcd
# (a master build past its last tag: `git describe`, and hack/lib/version.sh's rewrite of it).
_REPORTED_RE = re.compile(rf"^v?(\d+)\.(\d+)\.(\d+)(?:-{_PRE}(?=$|[-+.]))?(?:[-+.].*)?$")


@functools.total_ordering
@dataclass(frozen=True)
class KubeVersion:
    """A Kubernetes release (1.37.1) or pre-release tag (1.38.0-beta.0: `pre` is "beta.0")."""

    major: int
    minor: int
    patch: int
    pre: str = ""

    def __post_init__(self) -> None:
        if self.pre and not _PRE_RE.match(self.pre):
            raise ValueError(f"pre-release {self.pre!r} is not alpha.N, beta.N or rc.N")

    @classmethod
    def parse(cls, text: str) -> KubeVersion:
        """A version as a user writes it: MAJOR.MINOR.PATCH or a pre-release tag (1.38.0-beta.0), with or
        without a leading v."""
        match = _VERSION_RE.match(text.strip())
        if not match:
            raise BadInput(
                f"{text!r} is not a Kubernetes release version",
                f"use MAJOR.MINOR.PATCH, e.g. {DEFAULT_K8S_VERSION}",  # or a pre-release tag: 1.38.0-beta.0
            )
        return cls._of(match)

    @classmethod
    def from_reported(cls, text: str) -> KubeVersion:
        """A version as a cluster or a source tree reports it: v1.37.1 and vendor builds of it (v1.37.1-gke.100,
        v1.37.1+k3s1) are 1.37.1; a pre-release tag (v1.38.0-beta.0) is itself, and a build past one (a master
        tree: v1.39.0-alpha.0-123+<commit>) counts as that tag, below the next (1.39.0-alpha.1)."""
        match = _REPORTED_RE.match(text.strip())
        if not match:
            raise BadInput(
                f"the cluster reports version {text!r}, which is not a Kubernetes version",
                "point the suite at a cluster running a Kubernetes release (vMAJOR.MINOR.PATCH)",
            )
        return cls._of(match)

    @classmethod
    def _of(cls, match: re.Match[str]) -> KubeVersion:
        major, minor, patch, kind, number = match.groups()
        return cls(int(major), int(minor), int(patch), f"{kind}.{int(number)}" if kind else "")

    def _key(self) -> tuple[int, int, int, int, int]:
        if not self.pre:
            return (self.major, self.minor, self.patch, len(PRE_RELEASE_KINDS), 0)
        kind, number = self.pre.split(".")
        return (self.major, self.minor, self.patch, PRE_RELEASE_KINDS.index(kind), int(number))

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, KubeVersion):
            return NotImplemented
        return self._key() < other._key()

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}" + (f"-{self.pre}" if self.pre else "")

    @property
    def is_prerelease(self) -> bool:
        return bool(self.pre)

    @property
    def release(self) -> KubeVersion:
        """The release a pre-release leads to (1.38.0 for 1.38.0-beta.0); a release itself."""
        return KubeVersion(self.major, self.minor, self.patch)

    @property
    def tag(self) -> str:
        """The git tag / Go module version of k8s.io/kubernetes, e.g. v1.37.1, v1.38.0-beta.0."""
        return f"v{self}"

    @property
    def staging_tag(self) -> str:
        """The Go module version of the staging modules (k8s.io/api etc.), e.g. v0.37.1, v0.38.0-beta.0."""
        return f"v0.{self.minor}.{self.patch}" + (f"-{self.pre}" if self.pre else "")

    def previous_minor_of(self, other: KubeVersion) -> bool:
        """True when this is a release of the minor just below `other` (what upgrade tests start from)."""
        return (self.major, self.minor) == (other.major, other.minor - 1)

    def at_least(self, minor: int) -> bool:
        """True for 1.<minor> and later (all our rules are about 1.x minors)."""
        return (self.major, self.minor) >= (1, minor)


# The newest release the whole suite has run green on here (docs/versions.md, "Which Kubernetes"): 1.37.2 on 2026-11-28,
# every test of suites/, slow ones included, kubernetes#141290's check passing as fixed (CHANGELOG-1.37, v1.37.2,
# kubernetes#142492). The Go module proxy serves it since 2026-11-27.
DEFAULT_K8S_VERSION = KubeVersion(1, 37, 2)
# The previous minor, for kubelet upgrade tests: the 1.36 patch of the matrix runs. v1.36.5 downloads and
# verifies since 2026-11-27 (before, the checksum database answered 404 for it); not yet run here.
PREVIOUS_MINOR_VERSION = KubeVersion(1, 36, 4)

# How many minors a kubelet may be older than kube-apiserver: three since 1.28 (KEP-3935, "Support
# kubelet up to 3 minors older than kube-apiserver"; kubernetes.io/releases/version-skew-policy). Never newer.
KUBELET_SKEW_MINORS = 3


def kubelet_skew_allows(control_plane: KubeVersion, kubelet: KubeVersion) -> bool:
    """Whether a kubelet of this release may run under this control plane (never newer, at most
    KUBELET_SKEW_MINORS minors older)."""
    return kubelet <= control_plane and control_plane.minor - kubelet.minor <= KUBELET_SKEW_MINORS


# The version matrix (`make matrix`): for each minor 1.31-1.37 the newest patch that builds here, as `device-conformance
# versions` found on 2026-11-28: k8s.io/kubernetes downloads and verifies against the checksum database, and the
# proxy serves every module its build fetches (gobuild.build_requirements). Newer patches: 1.31.5-1.31.14 lack
# staging modules (k8s.io/endpointslice, cloud-provider, kube-proxy, ... answer 403 or have no checksum entry) or
# answer 403 themselves (1.31.10-11); 1.32.10-1.32.13 lack staging modules (endpointslice, kms, csi-translation-lib)
# or answer 403 (1.32.12); 1.34.13, 1.35.9, 1.35.10 and 1.36.6 answer 403. The answers drift: run `versions` again.
# The default (DEFAULT_K8S_VERSION) and the upgrade tests' PREVIOUS_MINOR_VERSION stay where the whole suite has run.
MATRIX_VERSIONS: tuple[KubeVersion, ...] = (
    KubeVersion(1, 31, 4),
    KubeVersion(1, 32, 9),
    KubeVersion(1, 33, 13),
    KubeVersion(1, 34, 12),
    KubeVersion(1, 35, 8),
    KubeVersion(1, 36, 5),
    KubeVersion(1, 37, 2),
)

# Below the matrix: the newest patch of 1.28-1.30, each its minor's last release (the proxy answers 403 for
# k8s.io/kubernetes v1.28.16, v1.29.16 and v1.30.15). k8s.io/kubernetes and every staging module at these versions
# download, verify against sum.golang.org (GOSUMDB on, go.sum written by the build) and build with go1.26.8
# (2026-11-24). They run the device-plugin and smoke suites
# only: every DRA test skips (1.27-1.30 serve only resource.k8s.io/v1alpha2, classic DRA, which the suites'
# objects do not fit; FIRST_DRA_MINOR) and every taints test (FIRST_DEVICE_TAINTS_MINOR), so they are not in
# `make matrix`; `device-conformance matrix --versions 1.28.15,1.29.15,1.30.14` runs them (docs/versions.md).
OLDER_VERSIONS: tuple[KubeVersion, ...] = (
    KubeVersion(1, 28, 15),
    KubeVersion(1, 29, 15),
    KubeVersion(1, 30, 14),
)
