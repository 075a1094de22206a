"""Kubernetes server binaries for any version: a user directory, a local source tree (source_build.py),
the official release, or a Go build of the release's tree from the module proxy (source_build.build_release:
built as a K8S_SOURCE tree is, so a patched tree of the release finds its unchanged packages in Go's cache).

Cached per version (toolchain/cache.py): `kubernetes/vX.Y.Z/` holds the four server binaries; a
kubelet-only entry (`kubernetes/vX.Y.Z-kubelet/`, what upgrade tests need) is built when no full entry
of that version exists, since a kubelet-only `go build` is several times faster than all four.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain.cache import (
    BinarySet,
    Progress,
    cache_root,
    ensure_cached,
    has_manifest,
    refuse_foreign,
    sha256,
    verify_manifest,
)
from device_conformance.toolchain.platform_arch import foreign_binaries, go_arch
from device_conformance.toolchain.source_build import build_release, ensure_source_binaries, source_entry_dir

COMPONENTS = ("kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
KUBELET_ONLY = ("kubelet",)
# What only a kind node image needs besides the server binaries (toolchain/nodeimage): kubeadm and kubectl
# on the node, kube-proxy in its image. Cached in an entry of their own, built only for node images.
NODE_IMAGE_COMPONENTS = ("kubeadm", "kubectl", "kube-proxy")
KNOWN_COMPONENTS = COMPONENTS + NODE_IMAGE_COMPONENTS
# {arch}: GOARCH of the host (platform_arch.go_arch), the directory name the release site uses.
RELEASE_URL = "https://dl.k8s.io/{tag}/bin/linux/{arch}/{name}"
VERSION_TIMEOUT = 30  # seconds for `<binary> --version` (a cold start of a 100 MB binary on a busy host)

KubernetesBinaries = BinarySet[KubeVersion]


def entry_dir(version: KubeVersion, components: Sequence[str] = COMPONENTS) -> Path:
    """The cache entry of `version` holding exactly `components` (the full set has the plain tag)."""
    root = cache_root() / "kubernetes"
    if tuple(components) == COMPONENTS:
        return root / version.tag
    return root / f"{version.tag}-{'-'.join(components)}"


def ensure_binaries(
    version: KubeVersion,
    *,
    user_dir: Path | None = None,
    source_tree: Path | None = None,
    components: Sequence[str] = COMPONENTS,
    progress: Progress = print,
) -> KubernetesBinaries:
    """The server binaries `components` of `version`, fetched or built when missing.

    A subset (e.g. KUBELET_ONLY) comes from the full entry of that version when there is one. From a
    source tree all four are built (stamped as `version`) and cached by a hash of the tree's inputs."""
    components = _known(components)
    if user_dir is not None and source_tree is not None:
        raise BadInput(
            f"both K8S_BIN_DIR={user_dir} and K8S_SOURCE={source_tree} are given", "give one of them, not both"
        )
    if user_dir is not None:
        return _from_user_dir(version, user_dir, components)
    if source_tree is not None:
        return ensure_source_binaries(version, source_tree, COMPONENTS, progress)
    full = entry_dir(version)
    if components != COMPONENTS and has_manifest(full, components) and verify_manifest(full, components) is None:
        refuse_foreign(full, components)
        return BinarySet(version, full, "cache")  # complete entries only appear by rename: no lock needed

    def fill(staging: Path) -> str:
        if _download_release(version, staging, components, progress):
            return "release"
        build_release(version, staging, components, progress)  # as a K8S_SOURCE tree of it builds
        return "go build"

    cached = entry_dir(version, components)
    return BinarySet(version, cached, ensure_cached(cached, components, fill, progress))


def binary_source(
    version: KubeVersion,
    *,
    user_dir: Path | None = None,
    source_tree: Path | None = None,
    components: Sequence[str] = COMPONENTS,
) -> str:
    """Where ensure_binaries would take them from, without hashing or building (for reports)."""
    if user_dir is not None:
        return f"K8S_BIN_DIR {user_dir}"
    if source_tree is not None:
        return (
            f"K8S_SOURCE {source_tree}: go build at session start unless a build of the same inputs is cached "
            f"({source_entry_dir(version, '<inputs hash>')})"
        )
    for directory in dict.fromkeys((entry_dir(version), entry_dir(version, components))):
        if has_manifest(directory, components):
            return f"cache {directory}"
    return f"not cached: fetched or built (go build) at session start into {entry_dir(version, components)}"


def _known(components: Sequence[str]) -> tuple[str, ...]:
    unknown = [name for name in components if name not in KNOWN_COMPONENTS]
    if unknown or not components:
        raise BadInput(
            f"unknown Kubernetes components {unknown or '(none)'}", f"ask for some of: {', '.join(KNOWN_COMPONENTS)}"
        )
    return tuple(name for name in KNOWN_COMPONENTS if name in components)


def _from_user_dir(version: KubeVersion, user_dir: Path, components: Sequence[str]) -> KubernetesBinaries:
    if not user_dir.is_dir():
        raise BadInput(
            f"K8S_BIN_DIR={user_dir} is not a directory",
            f"point it at a directory holding {', '.join(components)} of v{version}, "
            "or unset K8S_BIN_DIR to build them",
        )
    missing = [name for name in components if not os.access(user_dir / name, os.X_OK)]
    if missing:
        raise BadInput(
            f"K8S_BIN_DIR={user_dir} has no executable {', '.join(missing)}",
            f"put {', '.join(components)} of v{version} there, or unset K8S_BIN_DIR to build them",
        )
    foreign = foreign_binaries(user_dir, list(components))
    if foreign:
        raise BadInput(
            f"K8S_BIN_DIR={user_dir} holds binaries built for another architecture than this {go_arch()} host: "
            f"{foreign}",
            f"put linux/{go_arch()} binaries of v{version} there, or unset K8S_BIN_DIR to build them",
        )
    # Binaries of another release would run under the expectations of `version`: every version-dependent
    # check would judge the wrong kubelet. Each one says its own version (`kubelet --version`).
    reported = {name: _reported_version(user_dir / name) for name in components}
    wrong = {name: text for name, text in reported.items() if text != version.tag}
    if wrong:
        found = ", ".join(f"{name} {text}" for name, text in wrong.items())
        distinct = set(reported.values())
        only = distinct.pop() if len(distinct) == 1 else ""
        hint = f"set K8S_VERSION={only[1:]} to test these, or " if only.startswith("v") else ""
        raise BadInput(
            f"K8S_BIN_DIR={user_dir} holds other binaries than Kubernetes {version.tag}: {found}",
            f"{hint}put the {version.tag} binaries there, or unset K8S_BIN_DIR to build them",
        )
    return BinarySet(version, user_dir, "user directory")


def _reported_version(binary: Path) -> str:
    """The release a Kubernetes binary reports (`Kubernetes v1.37.1` -> v1.37.1, build suffixes dropped),
    or what it printed instead, shortened."""
    try:
        proc = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(does not run: {exc})"
    words = proc.stdout.split()
    if proc.returncode == 0 and len(words) == 2 and words[0] == "Kubernetes":
        try:
            return KubeVersion.from_reported(words[1]).tag
        except BadInput:
            pass
    said = (proc.stdout + proc.stderr).strip().replace("\n", " ")[:80]
    return f"(`{binary.name} --version` exits {proc.returncode}: {said!r})"


def _download_release(version: KubeVersion, target: Path, components: Sequence[str], progress: Progress) -> bool:
    """Fetch official release binaries; False (quietly) when dl.k8s.io is unreachable."""
    arch = go_arch()
    for name in components:
        url = RELEASE_URL.format(tag=version.tag, name=name, arch=arch)
        try:
            with urllib.request.urlopen(url + ".sha256", timeout=5) as reply:
                expected = reply.read().decode().split()[0]
            progress(f"downloading {url}")
            with urllib.request.urlopen(url, timeout=60) as reply, (target / name).open("wb") as out:
                shutil.copyfileobj(reply, out, 1 << 20)
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            if name != components[0]:
                progress(f"release download of {name} failed ({exc}); building from source instead")
            return False
        if sha256(target / name) != expected:
            progress(f"{url} does not match its published sha256; building from source instead")
            return False
        (target / name).chmod(0o755)
    return True
