"""The host's architecture under the names the toolchain needs: Go's GOARCH, which is also what the
release site's paths (dl.k8s.io/<tag>/bin/linux/<arch>/) and an OCI image config's "architecture" use
(opencontainers/image-spec config.md: "values SHOULD be listed in the Go Language document for GOARCH"),
and Debian's multiarch triplet, the library directory of a node's root.

Go builds need nothing from here: they follow the host while GOARCH is unset, as it is everywhere here.
"""

from __future__ import annotations

import platform

from device_conformance.core.errors import BadInput

# platform.machine() (uname -m) -> GOARCH. Linux says aarch64, macOS and the BSDs arm64.
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
# GOARCH -> Debian's multiarch tuple (wiki.debian.org/Multiarch/Tuples).
_GNU_TRIPLET = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
SUPPORTED = tuple(_GNU_TRIPLET)


def go_arch(machine: str | None = None) -> str:
    """GOARCH of `machine` (a `uname -m` name; the host's when None): amd64 or arm64, else BadInput."""
    name = platform.machine() if machine is None else machine
    arch = _GO_ARCH.get(name.lower())
    if arch is None:
        raise BadInput(
            f"unsupported host architecture {name!r}: Kubernetes binaries and images are only set up for "
            + ", ".join(f"linux/{supported}" for supported in SUPPORTED),
            "run on an x86_64 (amd64) or aarch64 (arm64) host",
        )
    return arch


def gnu_triplet(machine: str | None = None) -> str:
    """Debian's multiarch triplet of `machine` (the host's when None), e.g. x86_64-linux-gnu."""
    return _GNU_TRIPLET[go_arch(machine)]
