"""Kubernetes versions: parsing, ordering, and the default this suite tests."""

from __future__ import annotations

import re
from dataclasses import dataclass

from device_conformance.errors import BadInput

# The newest release whose module zip the Go module proxy serves on our machines: k8s.io/kubernetes
# v1.37.2 answers "403 This module version is not available", v1.37.1 builds. See README.md.
DEFAULT_K8S_VERSION = "1.37.1"
# The previous minor, for kubelet upgrade tests: the newest 1.36 patch that builds here. The proxy lists
# v1.36.5 but its checksum database answers 404 for it, so `go` refuses it; v1.36.4 verifies.
PREVIOUS_MINOR_VERSION = "1.36.4"

_VERSION_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


@dataclass(frozen=True, order=True)
class KubeVersion:
    major: int
    minor: int
    patch: int

    @classmethod
    def parse(cls, text: str) -> KubeVersion:
        match = _VERSION_RE.match(text.strip())
        if not match:
            raise BadInput(
                f"K8S_VERSION={text!r} is not a Kubernetes release version",
                f"use MAJOR.MINOR.PATCH, e.g. K8S_VERSION={DEFAULT_K8S_VERSION}",
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

    def at_least(self, minor: int) -> bool:
        """True for 1.<minor> and later (all our rules are about 1.x minors)."""
        return (self.major, self.minor) >= (1, minor)
