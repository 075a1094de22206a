"""Kubernetes server binaries for any version: a user directory, the official release, or a Go build.

Binaries are cached per version outside the repository. A cache entry becomes visible only by an
atomic rename after every binary is complete and its checksum recorded, so a half-written binary is
never reused; a cached binary whose checksum no longer matches is discarded and fetched again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from device_conformance.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.gobuild import build_kubernetes

COMPONENTS = ("kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
RELEASE_URL = "https://dl.k8s.io/{tag}/bin/linux/amd64/{name}"
MANIFEST = "MANIFEST.json"

Progress = Callable[[str], None]


@dataclass(frozen=True)
class BinarySet:
    version: KubeVersion
    directory: Path
    source: str

    def path(self, component: str) -> Path:
        return self.directory / component


def cache_root() -> Path:
    return Path(os.environ.get("DEVICE_CONFORMANCE_CACHE", Path.home() / ".cache" / "device-conformance"))


def ensure_binaries(version: KubeVersion, *, user_dir: Path | None = None, progress: Progress = print) -> BinarySet:
    """Return the four server binaries of `version`, fetching or building them when missing."""
    if user_dir is not None:
        return _from_user_dir(version, user_dir)

    def fill(staging: Path) -> str:
        if _download_release(version, staging, progress):
            return "release"
        build_kubernetes(version, staging, COMPONENTS, progress)
        return "go build"

    cached = cache_root() / "kubernetes" / version.tag
    return BinarySet(version, cached, ensure_cached(cached, COMPONENTS, fill, progress))


def ensure_cached(cached: Path, names: Sequence[str], fill: Callable[[Path], str], progress: Progress) -> str:
    """Make `cached` hold the files `names` with a verified checksum manifest; returns where they came from.

    A usable cache entry is returned as "cache". Otherwise fill(staging) writes the files into an empty
    staging directory and returns its source; the manifest is recorded and the directory appears at
    `cached` only by an atomic rename, so a half-written entry is never reused.
    """
    if cached.exists():
        problem = verify_manifest(cached, names)
        if problem is None:
            return "cache"
        progress(f"cached binaries in {cached} are unusable ({problem}); removing them and fetching again")
        shutil.rmtree(cached)
    staging = cached.with_name(f"{cached.name}.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        source = fill(staging)
        write_manifest(staging, names)
        try:
            staging.rename(cached)
        except OSError:
            # Another process finished the same entry first; theirs is as good as ours.
            if verify_manifest(cached, names) is not None:
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return source


def _from_user_dir(version: KubeVersion, user_dir: Path) -> BinarySet:
    missing = [name for name in COMPONENTS if not os.access(user_dir / name, os.X_OK)]
    if missing:
        raise BadInput(
            f"K8S_BIN_DIR={user_dir} has no executable {', '.join(missing)}",
            f"put kubelet, kube-apiserver, kube-controller-manager and kube-scheduler of v{version} there, "
            "or unset K8S_BIN_DIR to build them",
        )
    return BinarySet(version, user_dir, "user directory")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(directory: Path, names: Sequence[str]) -> None:
    sums = {name: _sha256(directory / name) for name in names}
    (directory / MANIFEST).write_text(json.dumps(sums, indent=1))


def verify_manifest(directory: Path, names: Sequence[str]) -> str | None:
    """None when every named file matches its recorded checksum, else what is wrong."""
    try:
        sums = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError):
        return "no checksum manifest"
    for name in names:
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        if _sha256(path) != sums.get(name):
            return f"{name} does not match its recorded sha256 (corrupt or modified)"
    return None


def _download_release(version: KubeVersion, target: Path, progress: Progress) -> bool:
    """Fetch official release binaries; False (quietly) when dl.k8s.io is unreachable."""
    for name in COMPONENTS:
        url = RELEASE_URL.format(tag=version.tag, name=name)
        try:
            with urllib.request.urlopen(url + ".sha256", timeout=5) as reply:
                expected = reply.read().decode().split()[0]
            progress(f"downloading {url}")
            with urllib.request.urlopen(url, timeout=60) as reply, (target / name).open("wb") as out:
                shutil.copyfileobj(reply, out, 1 << 20)
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            if name != COMPONENTS[0]:
                progress(f"release download of {name} failed ({exc}); building from source instead")
            return False
        if _sha256(target / name) != expected:
            progress(f"{url} does not match its published sha256; building from source instead")
            return False
        (target / name).chmod(0o755)
    return True
