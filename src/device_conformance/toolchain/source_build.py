"""Kubernetes server binaries built from a local source tree (K8S_SOURCE), cached by what the build reads.

The cache key is a sha256 over the content of every file the build of the four commands reads from
the tree (as `go list -deps` names them: Go, cgo, assembly and embedded files of each package, and
the go.mod/go.sum/go.work files), the module@version of every dependency outside it, the Go
toolchain and our build flags. An unrelated edit (docs, tests, another command) keeps the entry; a
reverted edit finds its earlier entry again. Entries are `kubernetes/vX.Y.Z-src-<digest>/` next to the
release entries, with the same manifest and atomic rename (toolchain/cache.py).

The build is one `go build` of the four commands from the tree root, as in a checkout: the tree's
go.work (or go.mod replace directives, before 1.30) resolves the staging modules, and a vendor/
directory, where a tree has one, is used because the go command does so by default. The Go build
cache makes a rebuild after a one-line change recompile only the packages that import it and relink.

A release that is not downloaded is built the same way (build_release): a pristine tree of it, assembled
from the module proxy as `k8s-source get` does, built by build_tree with the same argv and environment. Go's
build cache keys a compiled package by its import path, its files' content, its dependencies' outputs, the
toolchain and the flags; with -trimpath not by its directory (cmd/go/internal/work/exec.go, buildActionID;
`go help cache`). So a later tree of that release, at any path, finds every package it did not change in the
cache: only the changed packages and their importers compile. A wrapper module over the module cache
(gobuild.build_kubernetes) compiles other files (k8s.io/kubernetes@vX.Y.Z/..., keyed by module@version) and
serves no package of a tree; it is what a release falls back to when its tree cannot be assembled.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.process import pid_alive
from device_conformance.toolchain.cache import BinarySet, Progress, cache_root, ensure_cached
from device_conformance.toolchain.gobuild import (
    build_kubernetes,
    download_modules,
    go_binary,
    json_stream,
    local_go_version,
    run_go,
    toolchain_env,
    toolchain_message,
    version_ldflags,
    without_mod_flag,
)
from device_conformance.toolchain.source_get import KUBERNETES_MODULE, get_tree
from device_conformance.toolchain.source_tree import check_tree, tree_staging_modules, tree_toolchain

# Bump when the build below changes in a way the other key parts do not show.
RECIPE = "device-conformance source build 1"
# -trimpath keeps the tree's directory out of the compiled packages, so the Go build cache serves
# a copy of a tree in another directory too (and the binaries do not name our paths).
BUILD_FLAGS = ("-trimpath",)
# What go list names as the files of a package that its compilation reads (cmd/go's PackagePublic).
PACKAGE_FILE_FIELDS = (
    "GoFiles",
    "CgoFiles",
    "CFiles",
    "CXXFiles",
    "MFiles",
    "HFiles",
    "FFiles",
    "SFiles",
    "SwigFiles",
    "SwigCXXFiles",
    "SysoFiles",
    "EmbedFiles",
)
MODULE_FILES = ("go.mod", "go.sum")
TREE_FILES = ("go.work", "go.work.sum", "vendor/modules.txt")
GO_ENV = ("GOVERSION", "GOOS", "GOARCH", "GOAMD64", "CGO_ENABLED", "GOEXPERIMENT", "CC")
SOURCE_INFO = "SOURCE.json"
ENTRIES_KEPT = 4  # source entries kept besides the one in use: each is ~300 MB


@dataclass(frozen=True)
class TreeInputs:
    """What a build of the tree reads, hashed."""

    digest: str
    files: int  # files of the tree hashed
    size: int  # their bytes
    seconds: float  # the time it took (go list + hashing)


def command_packages(components: Sequence[str]) -> list[str]:
    return [f"./cmd/{name}" for name in components]


def build_env(tree: Path | None = None) -> dict[str, str]:
    """The environment of both `go list` and `go build`, as hack/lib/golang.sh sets it up: the go
    command finds the tree's go.work itself (GOWORK and GO111MODULE empty: their defaults), and -mod
    is left to the go command (workspace mode refuses -mod=mod; a vendor/ directory is used by default).
    A tree whose go.mod needs a newer Go than the local one gets GOTOOLCHAIN=go<its .go-version>."""
    toolchain = tree_toolchain(tree, local_go_version(go_binary("Kubernetes binaries"))) if tree else None
    return {
        **os.environ,
        "GOWORK": "",
        "GO111MODULE": "",
        "GOFLAGS": without_mod_flag(os.environ.get("GOFLAGS", "")),
        **toolchain_env(toolchain),
    }


def tree_inputs(tree: Path, version: KubeVersion, components: Sequence[str]) -> TreeInputs:
    """Hash everything a build of `components` from `tree` reads (see the module docstring)."""
    started = time.monotonic()
    fields = ",".join(("Dir", "Standard", "Module", *PACKAGE_FILE_FIELDS))
    packages = _go_json(tree, ["list", "-deps", f"-json={fields}", *command_packages(components)])
    go_env = _go_json(tree, ["env", "-json", *GO_ENV])[0]
    recipe = [RECIPE, version_ldflags(version), *BUILD_FLAGS, *(f"{k}={go_env.get(k, '')}" for k in GO_ENV)]
    files, external = input_files(tree, packages)
    digest, size = hash_inputs(tree, files, external, recipe)
    return TreeInputs(digest, len(files), size, time.monotonic() - started)


def input_files(tree: Path, packages: Iterable[Mapping[str, object]]) -> tuple[list[Path], list[str]]:
    """The files to hash, and module@version of dependencies outside the tree (fixed by go.sum).

    Files are hashed for every package inside the tree (vendored ones included) or in a module
    without a version (a replace to a local directory); the go.mod/go.sum of each such module and of
    every staging module too."""
    root = tree.resolve()
    files: set[Path] = {root / name for name in TREE_FILES if (root / name).is_file()}
    # Every workspace module's requirements shape the build list, imported or not.
    for module_dir in [root, *(root / "staging/src" / name for name in tree_staging_modules(root))]:
        files.update(module_dir / name for name in MODULE_FILES if (module_dir / name).is_file())
    external: set[str] = set()
    for package in packages:
        if package.get("Standard"):
            continue
        directory = Path(str(package["Dir"])).resolve()
        module = package.get("Module") or {}
        assert isinstance(module, dict)
        used = module.get("Replace") or module  # a replace directive's target is what is compiled
        if directory.is_relative_to(root) or not used.get("Version"):
            files.update(directory / str(name) for field in PACKAGE_FILE_FIELDS for name in package.get(field) or ())
            if used.get("Dir"):
                module_dir = Path(used["Dir"])
                files.update(module_dir / name for name in MODULE_FILES if (module_dir / name).is_file())
        else:
            external.add(f"{module['Path']}@{module['Version']} {used['Path']}@{used['Version']}")
    return sorted(files), sorted(external)


def hash_inputs(tree: Path, files: Sequence[Path], external: Sequence[str], recipe: Sequence[str]) -> tuple[str, int]:
    """sha256 over each file's path (relative to the tree when inside it) and content, the external
    modules and the recipe; and the bytes read. Content, not mtime: a revert finds its entry again."""
    root = tree.resolve()
    digest = hashlib.sha256()
    size = 0
    for path in files:
        name = str(path.relative_to(root)) if path.is_relative_to(root) else str(path)
        data = path.read_bytes()
        size += len(data)
        digest.update(f"file {name} {len(data)}\n".encode())
        digest.update(data)
    for line in [*(f"module {m}" for m in external), *(f"recipe {r}" for r in recipe)]:
        digest.update(f"{line}\n".encode())
    return digest.hexdigest(), size


def source_entry_dir(version: KubeVersion, digest: str) -> Path:
    """The cache entry of binaries built from a tree whose inputs hash to `digest`."""
    return cache_root() / "kubernetes" / f"{version.tag}-src-{digest[:16]}"


def ensure_source_binaries(
    version: KubeVersion, tree: Path, components: Sequence[str], progress: Progress = print
) -> BinarySet[KubeVersion]:
    """The binaries `components` built from `tree`, stamped as `version`: cached, or built now."""
    check_tree(tree)
    inputs = tree_inputs(tree, version, components)
    entry = source_entry_dir(version, inputs.digest)
    progress(
        f"K8S_SOURCE {tree}: {inputs.files} input files ({inputs.size / 1e6:.0f} MB) hash to "
        f"{inputs.digest[:16]} ({inputs.seconds:.1f}s)"
    )

    def fill(staging: Path) -> str:
        elapsed = build_tree(tree, version, staging, components, progress)
        info = {"tree": str(tree), "digest": inputs.digest, "files": inputs.files, "build_seconds": round(elapsed)}
        (staging / SOURCE_INFO).write_text(json.dumps(info, indent=1))
        return f"go build of {tree}"

    source = ensure_cached(entry, components, fill, progress)
    os.utime(entry)  # last use, for pruning
    prune_source_entries(keep=entry)
    return BinarySet(version, entry, source)


def build_tree(tree: Path, version: KubeVersion, target: Path, components: Sequence[str], progress: Progress) -> float:
    """One `go build` of the commands from the tree root into target/; returns the seconds it took."""
    argv = [go_binary("Kubernetes binaries"), "build", "-v", *BUILD_FLAGS, "-ldflags", version_ldflags(version)]
    argv += ["-o", f"{target}/", *command_packages(components)]
    local = local_go_version(argv[0])
    toolchain = tree_toolchain(tree, local)
    if toolchain is not None:
        progress(toolchain_message(f"K8S_SOURCE {tree}", (tree / "go.mod").read_text(), local, toolchain))
    progress(
        f"building {', '.join(components)} from {tree} as {version.tag} "
        "(minutes when the Go build cache is cold, seconds after a small change)"
    )
    return run_go(
        argv,
        tree,
        f"Kubernetes from {tree}",
        progress,
        env=build_env(tree),
        packages=command_packages(components),
        flags=BUILD_FLAGS,
    )


def release_tree_dir(version: KubeVersion, pid: int | None = None) -> Path:
    """Where build_release assembles the pristine tree of `version` (removed once built)."""
    return cache_root() / "gobuild" / f"{version.tag}-tree-{os.getpid() if pid is None else pid}"


def build_release(version: KubeVersion, target: Path, components: Sequence[str], progress: Progress) -> float:
    """Build a release's `components` into target/ as a K8S_SOURCE tree of it is built (see the module
    docstring): so the Go build cache holds every package of the release's tree, keyed independently of the
    tree's path, and a patched tree of it compiles only what its patch changed. Returns the seconds the build
    took. A release whose tree cannot be assembled (the proxy refuses a staging module no server binary
    imports, e.g. k8s.io/sample-apiserver at v0.31.4) is built from a wrapper module instead."""
    tree = release_tree_dir(version)
    for orphan in tree.parent.glob(f"{version.tag}-tree-*"):  # left by a killed build
        pid = orphan.name.rsplit("-", 1)[-1].split(".")[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            shutil.rmtree(orphan, ignore_errors=True)
    # A release the proxy does not serve at all stops here with its own error, not at a fallback that fails alike.
    download_modules([f"{KUBERNETES_MODULE}@{version.tag}"], version)
    try:
        try:
            get_tree(version, tree, progress)
        except BadInput as exc:
            progress(
                f"a tree of {version.tag} cannot be assembled ({exc.problem}); building it from a wrapper module, "
                "whose Go build cache a later K8S_SOURCE tree of it does not use"
            )
            started = time.monotonic()
            build_kubernetes(version, target, components, progress)
            return time.monotonic() - started
        return build_tree(tree, version, target, components, progress)
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def prune_source_entries(keep: Path, count: int = ENTRIES_KEPT) -> list[Path]:
    """Remove source entries beyond the `count` most recently used (and never `keep`)."""
    root = cache_root() / "kubernetes"
    entries = sorted(
        (p for p in root.glob("v*-src-*") if p.is_dir() and ".partial-" not in p.name and p != keep),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    removed = entries[count:]
    for entry in removed:
        shutil.rmtree(entry, ignore_errors=True)
    return removed


def _go_json(tree: Path, args: list[str]) -> list[dict]:
    go = go_binary("Kubernetes binaries")
    proc = subprocess.run([go, *args], cwd=tree, env=build_env(tree), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise BadInput(
            f"`go {' '.join(args[:2])}` in K8S_SOURCE={tree} failed:\n{proc.stderr.strip()[-2000:]}",
            "make the tree build (`go build ./cmd/kubelet` in it), or point K8S_SOURCE at another tree",
        )
    return json_stream(proc.stdout)
