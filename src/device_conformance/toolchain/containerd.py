"""containerd 2.x built from the Go module proxy, cached per version like the Kubernetes binaries.

Debian's containerd 1.6.20 has no CDI, and DRA drivers hand devices to containers through CDI spec
files (/var/run/cdi), so the local provider runs containerd 2.x (CDI on by default). The go.mod of
v2.2.1+ and v2.3.x has no replace/exclude directive, so a plain `go install pkg@version` builds it.
runc stays Debian's.
"""

from __future__ import annotations

import re
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.toolchain.cache import BinarySet, Progress, cache_root, ensure_cached
from device_conformance.toolchain.gobuild import go_binary, run_go

# 2.3 is an LTS line (containerd's RELEASES.md: supported to 2028-04-30); Kubernetes 1.36 lists 2.2.0+/2.3.0+.
DEFAULT_VERSION = "v2.3.4"
MODULE = "github.com/containerd/containerd/v2"
BINARIES = ("containerd", "containerd-shim-runc-v2", "ctr")
# containerd's BUILDING.md: these snapshotters need cgo or kernel headers, and we use overlayfs. The shim is built
# the way upstream's Makefile builds it (SHIM_CGO_ENABLED=0, tag no_grpc).
DAEMON_TAGS = "no_btrfs,no_devmapper,no_zfs"
SHIM_TAGS = "no_grpc"
VERSION_RE = re.compile(r"^v?(2\.\d+\.\d+)$")


# containerd versions are plain 'v'-prefixed strings (v2.3.4): no arithmetic is done on them.
ContainerdBinaries = BinarySet[str]


def release(text: str) -> str:
    """A containerd 2.x release as written by a user (2.2.7 or v2.2.7), always 'v'-prefixed."""
    match = VERSION_RE.match(text.strip())
    if match is None:
        raise BadInput(
            f"{text!r} is not a containerd 2.x release",
            f"use a version like {DEFAULT_VERSION} (v2.2.1+ or v2.3.x build with `go install`)",
        )
    return "v" + match.group(1)


def ldflags(version: str) -> str:
    """Stamp the version, so `containerd --version` and the CRI Version RPC report it."""
    return f"-s -w -X {MODULE}/version.Version={version}"


def install_commands(go: str, version: str) -> list[list[str]]:
    """The two `go install` invocations (daemon + ctr, then the shim with its own tags)."""
    common = [go, "install", "-v", "-trimpath", "-ldflags", ldflags(version)]
    return [
        [*common, "-tags", DAEMON_TAGS, f"{MODULE}/cmd/containerd@{version}", f"{MODULE}/cmd/ctr@{version}"],
        [*common, "-tags", SHIM_TAGS, f"{MODULE}/cmd/containerd-shim-runc-v2@{version}"],
    ]


def containerd_dir(version: str) -> Path:
    """The cache entry of containerd `version`."""
    return cache_root() / "containerd" / version


def ensure_containerd(version: str = DEFAULT_VERSION, *, progress: Progress = print) -> ContainerdBinaries:
    """containerd, its runc shim and ctr of `version` (see release()), built from the Go module proxy when
    not cached."""
    cached = containerd_dir(version)

    def build(staging: Path) -> str:
        go = go_binary(f"containerd {version} binaries", alternative=None)
        progress(f"building containerd {version} from the Go module proxy (a cold build takes a few minutes)")
        # CGO off: static binaries, no C toolchain needed; GOBIN puts them into the staging directory.
        env = {"CGO_ENABLED": "0", "GOBIN": str(staging), "GOFLAGS": "-buildvcs=false"}
        for argv in install_commands(go, version):
            run_go(argv, staging, f"containerd {version}", progress, env=env)
        return "go install"

    return BinarySet(version, cached, ensure_cached(cached, BINARIES, build, progress))
