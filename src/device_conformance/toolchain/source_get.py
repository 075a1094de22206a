"""Assemble a buildable Kubernetes source tree from the Go module proxy (`k8s-source get`).

No git hosting is reachable here, only the proxy. The module zip of k8s.io/kubernetes@vX.Y.Z holds the
repository minus its nested modules (every staging/src/k8s.io/<name> has its own go.mod, so the zip
leaves it out) and minus vendored code; the publishing bot publishes each staging module at
v0.Y.Z from the same commit. Placing those under staging/src/k8s.io/<name> gives what a git checkout
of the tag holds, so the tree's own go.mod `replace ./staging/...` directives and go.work resolve.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain.cache import Progress
from device_conformance.toolchain.gobuild import (
    NOT_IMPORTED_BY_SERVER_BINARIES,
    download_for_version,
    download_modules,
    go_binary,
)
from device_conformance.toolchain.source_tree import (
    tree_staging_modules,
    without_unbuilt_staging,
    write_version_file,
)

KUBERNETES_MODULE = "k8s.io/kubernetes"


@dataclass(frozen=True)
class Placement:
    """One module copied out of the module cache into the tree."""

    module: str
    version: str
    source: Path  # its read-only directory in the module cache
    target: str  # where it goes, relative to the tree root ("." for k8s.io/kubernetes)


def assembly_plan(
    version: KubeVersion,
    kubernetes: Mapping[str, str],
    staging: Sequence[Mapping[str, str]],
    stand_ins: Sequence[str] = (),
) -> list[Placement]:
    """Where each downloaded module goes: k8s.io/kubernetes at the root, each staging module under
    staging/src/<module path>. `kubernetes` and `staging` are `go mod download -json` records; `stand_ins` are
    staging modules the proxy refused that no server binary imports (written by write_stand_in instead)."""
    root = Path(kubernetes["Dir"])
    wanted = [name for name in tree_staging_modules(root) if name not in stand_ins]
    by_path = {record["Path"]: record for record in staging}
    missing = [name for name in wanted if name not in by_path]
    if missing:
        raise BadInput(
            f"{KUBERNETES_MODULE}@{version.tag} needs staging modules that were not downloaded: {', '.join(missing)}",
            "this is a bug in the assembly; report it with the version",
        )
    wrong = [f"{name}@{by_path[name]['Version']}" for name in wanted if by_path[name]["Version"] != version.staging_tag]
    if wrong:
        raise BadInput(
            f"staging modules of {version.tag} must be at {version.staging_tag}, got {', '.join(wrong)}",
            "this is a bug in the assembly; report it with the version",
        )
    plan = [Placement(KUBERNETES_MODULE, kubernetes["Version"], root, ".")]
    plan += [
        Placement(name, by_path[name]["Version"], Path(by_path[name]["Dir"]), f"staging/src/{name}") for name in wanted
    ]
    return plan


def get_tree(version: KubeVersion, target: Path, progress: Progress = print) -> list[Placement]:
    """Download k8s.io/kubernetes@version and its staging modules and assemble them at `target`.

    The tree appears at `target` only by a rename once complete; it records its version in the file
    source_tree.VERSION_FILE, so K8S_SOURCE=target needs no K8S_VERSION."""
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise BadInput(f"{target} exists and is not an empty directory", "name a new directory, or remove it first")
    progress(f"downloading {KUBERNETES_MODULE}@{version.tag} from the Go module proxy")
    (kubernetes,) = download_modules([f"{KUBERNETES_MODULE}@{version.tag}"], version)
    names = tree_staging_modules(Path(kubernetes["Dir"]))
    progress(f"downloading its {len(names)} staging modules at {version.staging_tag}")
    optional = [name for name in names if name in NOT_IMPORTED_BY_SERVER_BINARIES]
    staging = download_modules([f"{name}@{version.staging_tag}" for name in names if name not in optional], version)
    stand_ins = []
    for name in optional:
        records, problem = download_for_version([f"{name}@{version.staging_tag}"], version, go_binary())
        if problem is None:
            staging += records
        else:
            stand_ins.append(name)
            progress(
                f"{name}@{version.staging_tag}: the Go module proxy refuses it ({problem}); no server binary imports "
                f"it, so an empty stand-in module takes its place in the tree (its own tests will not build)"
            )
    plan = assembly_plan(version, kubernetes, staging, stand_ins)
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        for placement in plan:
            copy_writable(placement.source, partial / placement.target)
        for name in stand_ins:
            write_stand_in(partial, name)
        work = partial / "go.work"
        if work.is_file():  # the workspace must not name the staging modules left out (UNBUILT_STAGING)
            work.write_text(without_unbuilt_staging(work.read_text()))
        write_version_file(partial, version)
        if target.exists():
            target.rmdir()  # empty, checked above
        partial.rename(target)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    progress(f"assembled {target}: {KUBERNETES_MODULE}@{version.tag} and {len(plan) - 1} staging modules")
    return plan


def copy_writable(source: Path, target: Path) -> None:
    """Copy a module-cache directory (read-only files and directories) as ordinary writable files.

    Module zips keep no file modes, so shell scripts become executable again as in a checkout."""
    for directory, subdirs, files in os.walk(source):
        relative = Path(directory).relative_to(source)
        (target / relative).mkdir(mode=0o755, parents=True, exist_ok=True)
        subdirs.sort()
        for name in files:
            destination = target / relative / name
            shutil.copyfile(Path(directory) / name, destination)
            destination.chmod(0o755 if name.endswith(".sh") else 0o644)


def write_stand_in(tree: Path, module: str) -> None:
    """An empty module at staging/src/<module>: the tree's go.mod replace and go.work `use` of it resolve, and
    no package of it exists (gobuild.NOT_IMPORTED_BY_SERVER_BINARIES: no server binary imports one)."""
    directory = tree / "staging/src" / module
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "go.mod").write_text(
        f"// A stand-in written by device-conformance k8s-source get: the Go module proxy refused {module}.\n"
        f"module {module}\n"
    )
