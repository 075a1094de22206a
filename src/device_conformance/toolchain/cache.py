"""The binary cache: where built or downloaded binaries live, and how an entry is made and trusted.

An entry is a directory of binaries plus a sha256 manifest. It appears only by an atomic rename once
complete, so a half-written entry is never reused; an entry whose binaries no longer match their
checksums is discarded and filled again. One lock per entry keeps processes (xdist workers, a second
session) from filling the same entry at once: the others wait and then find it cached.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from device_conformance.core.errors import BadInput
from device_conformance.toolchain.platform_arch import foreign_binaries, go_arch

MANIFEST = "MANIFEST.json"
CACHE_ENV = "DEVICE_CONFORMANCE_CACHE"
MIB = 1 << 20
# Room an entry needs per binary, checked before a fetch or build: the largest, kube-apiserver 1.37, is 114 MiB.
BYTES_PER_BINARY = 128 * MIB

Progress = Callable[[str], None]
V = TypeVar("V")


@dataclass(frozen=True)
class BinarySet(Generic[V]):
    """Binaries of one version in one directory, and where they came from (cache, go build, ...)."""

    version: V
    directory: Path
    source: str

    def path(self, name: str) -> Path:
        return self.directory / name


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV, Path.home() / ".cache" / "device-conformance"))


def ensure_cached(cached: Path, names: Sequence[str], fill: Callable[[Path], str], progress: Progress) -> str:
    """Make `cached` hold the files `names` with a verified checksum manifest; returns where they came from.

    A usable cache entry is returned as "cache". Otherwise fill(staging) writes the files into an empty
    staging directory and returns its source; the manifest is recorded and the directory appears at
    `cached` only by an atomic rename, so a half-written entry is never reused. A disk too full for the
    entry is refused before anything is fetched or built (and a disk that fills up meanwhile, with the
    same message), the staging directory removed.
    """
    try:
        return _ensure_cached(cached, names, fill, progress)
    except OSError as exc:
        if exc.errno != errno.ENOSPC:
            raise
        raise _no_space(cached, names, f"filled up while writing it ({exc})") from None


def _ensure_cached(cached: Path, names: Sequence[str], fill: Callable[[Path], str], progress: Progress) -> str:
    with _entry_lock(cached):
        if cached.exists():
            refuse_foreign(cached, names)
            problem = verify_manifest(cached, names)
            if problem is None:
                return "cache"
            progress(f"cached binaries in {cached} are unusable ({problem}); removing them and fetching again")
            shutil.rmtree(cached)
        free = shutil.disk_usage(cached.parent).free
        if free < BYTES_PER_BINARY * len(names):
            raise _no_space(cached, names, f"has {free // MIB} MiB free")
        staging = cached.with_name(f"{cached.name}.partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        try:
            source = fill(staging)
            write_manifest(staging, names)
            try:
                staging.rename(cached)
            except OSError:
                # Another process (without our lock: an older version of this code) finished first.
                if verify_manifest(cached, names) is not None:
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        return source


def _no_space(cached: Path, names: Sequence[str], what: str) -> BadInput:
    need = BYTES_PER_BINARY * len(names) // MIB
    return BadInput(
        f"the disk of the binary cache {cache_root()} {what}; {cached.name} ({', '.join(names)}) needs about "
        f"{need} MiB",
        f"free space there, or set {CACHE_ENV} to a directory on a disk with room "
        "(the cache keeps each version's binaries, about 400 MB for Kubernetes)",
    )


@contextmanager
def _entry_lock(cached: Path) -> Iterator[None]:
    # Lock files live apart from the entries, so a cache directory lists entries only.
    locks = cache_root() / ".locks"
    locks.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256(str(cached.absolute()).encode()).hexdigest()[:12]
    cached.parent.mkdir(parents=True, exist_ok=True)
    with (locks / f"{cached.name}-{key}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def refuse_foreign(entry: Path, names: Sequence[str]) -> None:
    """BadInput when the entry holds binaries of another architecture: the cache is keyed by version, not by
    architecture, so a cache shared between an amd64 and an arm64 machine would hand one the other's binaries.
    Refused rather than rebuilt, which would only take the entry from the other machine."""
    foreign = foreign_binaries(entry, list(names))
    if foreign:
        raise BadInput(
            f"the binary cache entry {entry} holds binaries built for another architecture than this "
            f"{go_arch()} host: {foreign}",
            f"give this machine a cache of its own: set {CACHE_ENV} to a directory only {go_arch()} machines use",
        )


def has_manifest(directory: Path, names: Sequence[str]) -> bool:
    """A cheap look (no hashing): does `directory` look like a complete entry for `names`?"""
    try:
        sums = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    return all(name in sums and (directory / name).is_file() for name in names)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_manifest(directory: Path, names: Sequence[str]) -> None:
    sums = {name: sha256(directory / name) for name in names}
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
        if sha256(path) != sums.get(name):
            return f"{name} does not match its recorded sha256 (corrupt or modified)"
    return None
