"""The host's architecture under the names the toolchain needs: Go's GOARCH, which is also what the
release site's paths (dl.k8s.io/<tag>/bin/linux/<arch>/) and an OCI image config's "architecture" use
(opencontainers/image-spec config.md: "values SHOULD be listed in the Go Language document for GOARCH"),
and Debian's multiarch triplet, the library directory of a node's root.

Go builds need nothing from here: they follow the host while GOARCH is unset, as it is everywhere here.
"""

from __future__ import annotations

import platform
from pathlib import Path

from device_conformance.core.errors import BadInput

# platform.machine() (uname -m) -> GOARCH. Linux says aarch64, macOS and the BSDs arm64.
_GO_ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64"}
# GOARCH -> Debian's multiarch tuple (wiki.debian.org/Multiarch/Tuples).
_GNU_TRIPLET = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}
SUPPORTED = tuple(_GNU_TRIPLET)
# ELF e_machine -> GOARCH (the System V ABI's machine numbers: EM_X86_64 62, EM_AARCH64 183).
_ELF_MACHINE = {62: "amd64", 183: "arm64"}


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


def binary_arch(path: Path) -> str | None:
    """GOARCH of the ELF executable at `path` ("amd64", "arm64", or "elf-machine-N" for another machine); None when
    it is no ELF file (a script, a tarball) or cannot be read."""
    try:
        with path.open("rb") as f:
            header = f.read(20)
    except OSError:
        return None
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return None
    machine = int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")
    return _ELF_MACHINE.get(machine, f"elf-machine-{machine}")


def foreign_binaries(directory: Path, names: list[str] | tuple[str, ...]) -> str:
    """The ELF binaries among `names` in `directory` built for another architecture than the host's, as
    "kubelet (arm64), ..." for a message, or "" when there is none: they cannot run here (exec format error)."""
    host = go_arch()
    found = {name: binary_arch(directory / name) for name in names}
    return ", ".join(f"{name} ({arch})" for name, arch in found.items() if arch is not None and arch != host)
