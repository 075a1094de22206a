"""The kind binary: found on PATH (or $KIND), checked against the node version, installed with `go install`."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.kind import KIND_INSTALL_VERSION, minimum_kind
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.process import run
from device_conformance.toolchain.go_tools import GoTool

_KIND_VERSION_RE = re.compile(r"kind v(\d+)\.(\d+)\.(\d+)")


def installed_kind_dir(version: str = KIND_INSTALL_VERSION) -> Path:
    return _kind_tool(version).directory()


def find_kind() -> Path | None:
    """$KIND, else `kind` on PATH, else the one `setup --provider kind` installed into the cache.

    We never pin or download kind behind the user's back: pinned kinds broke pytest-kind users
    (kr8s-org/kr8s#769, dask/dask-kubernetes#370)."""
    explicit = os.environ.get("KIND")
    if explicit:
        return Path(explicit) if Path(explicit).exists() else None
    on_path = shutil.which("kind")
    if on_path:
        return Path(on_path)
    cached = installed_kind_dir() / "kind"
    return cached if cached.exists() else None


def kind_version(kind: Path) -> tuple[int, int, int]:
    output = run([str(kind), "version"], timeout=30).stdout
    match = _KIND_VERSION_RE.search(output)
    if not match:
        raise BadInput(
            f"cannot read the version of {kind} from `kind version`: {output.strip()!r}", "use a kind release"
        )
    major, minor, patch = (int(part) for part in match.groups())
    return (major, minor, patch)


def require_kind(version: KubeVersion) -> Path:
    """The kind to use for `version`, or BadInput saying how to get a suitable one."""
    kind = find_kind()
    install = f"run `device-conformance setup --provider kind` (go install sigs.k8s.io/kind@{KIND_INSTALL_VERSION})"
    if kind is None:
        raise BadInput("kind is not installed (not on PATH, $KIND unset, nothing in the cache)", install)
    have = kind_version(kind)
    need = minimum_kind(version)
    if have < need:
        raise BadInput(
            f"{kind} is kind v{'.'.join(map(str, have))}, too old for Kubernetes {version} node images "
            f"(needs kind >= v{'.'.join(map(str, need))})",
            f"{install}, or set KIND=/path/to/a/newer/kind",
        )
    return kind


def install_kind(progress: Callable[[str], None] = print, version: str = KIND_INSTALL_VERSION) -> Path:
    """`go install sigs.k8s.io/kind@VERSION` into the cache (no PATH changes; find_kind() looks there)."""
    return _kind_tool(version).install(progress)


def _kind_tool(version: str) -> GoTool:
    return GoTool(
        "kind",
        "sigs.k8s.io/kind",
        version,
        timeout=1200,
        or_else=", or install a kind release (https://kind.sigs.k8s.io/docs/user/quick-start/)",
    )
