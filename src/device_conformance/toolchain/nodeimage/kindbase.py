"""kind's base-image recipe, read from the kind Go module of the version in use (never copied here).

sigs.k8s.io/kind@vX ships `images/base/`: a Dockerfile (Debian base, packages, component versions) and
`files/` (entrypoint, systemd units, containerd config). We parse the Dockerfile for what it installs and
lay `files/` into the node root the way its COPY lines do.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.kind import KIND_INSTALL_VERSION
from device_conformance.toolchain.gobuild import go_binary, go_mod_download

KIND_MODULE = "sigs.k8s.io/kind"


@dataclass(frozen=True)
class BaseRecipe:
    """What kind's images/base/Dockerfile installs, as data."""

    kind_version: str
    debian_suite: str  # from ARG BASE_IMAGE=debian:<suite>-slim
    packages: tuple[str, ...]  # the `clean-install` list of the base stage
    versions: dict[str, str]  # ARG *_VERSION defaults: CONTAINERD_VERSION, RUNC_VERSION, CNI_PLUGINS_VERSION, ...
    cni_plugins: dict[str, str]  # binary name -> package path inside github.com/containernetworking/plugins
    files: Path  # images/base/files of the module (read-only, in the Go module cache)


def download_module(spec: str) -> Path:
    """`go mod download` of one module@version; its directory in the module cache."""
    records, problem = go_mod_download([spec], go_binary(f"sources of {spec}", alternative=None))
    if problem is not None:
        raise BadInput(f"cannot download {spec} from the Go module proxy: {problem}", "check GOPROXY access")
    return Path(records[0]["Dir"])


def parse_dockerfile(text: str) -> tuple[str, tuple[str, ...], dict[str, str], dict[str, str]]:
    """(debian suite, packages, ARG versions, CNI plugins) from kind's images/base/Dockerfile text."""
    base = re.search(r"^ARG BASE_IMAGE=debian:([a-z]+)(?:-slim)?\s*$", text, re.M)
    if base is None:
        raise BadInput("kind's base Dockerfile has no `ARG BASE_IMAGE=debian:<suite>`", "use a kind release")
    # The first clean-install is the base stage's package list; it ends at the next `&&`.
    install = re.search(r"clean-install\s+\\\s*\n(.*?)&&", text, re.S)
    if install is None:
        raise BadInput("kind's base Dockerfile has no `clean-install` package list", "use a kind release")
    packages = tuple(word for word in install.group(1).replace("\\", " ").split() if word)
    versions = dict(re.findall(r'^ARG ([A-Z_]+_VERSION)="([^"]+)"', text, re.M))
    cni = dict(re.findall(r"go build -o \./bin/(\S+) -mod=vendor \./(plugins/\S+)", text))
    return base.group(1), packages, versions, cni


def base_recipe(kind_version: str = KIND_INSTALL_VERSION) -> BaseRecipe:
    """kind's base recipe at `kind_version` (downloads the module once; the module cache keeps it)."""
    base = download_module(f"{KIND_MODULE}@{kind_version}") / "images" / "base"
    dockerfile = base / "Dockerfile"
    if not dockerfile.is_file() or not (base / "files").is_dir():
        raise BadInput(f"{KIND_MODULE}@{kind_version} has no images/base/{{Dockerfile,files}}", "use kind >= v0.20")
    suite, packages, versions, cni = parse_dockerfile(dockerfile.read_text())
    return BaseRecipe(kind_version, suite, packages, versions, cni, base / "files")


def install_base_files(files: Path, root: Path) -> list[str]:
    """Copy kind's `files/` into `root` with the modes its Dockerfile's COPY --chmod lines give:
    scripts (usr/local/bin/*, kind/bin/*) 0755, everything else 0644, directories 0755. Returns the
    relative paths written."""
    written = []
    for source in sorted(files.rglob("*")):
        relative = source.relative_to(files)
        target = root / relative
        if source.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            target.chmod(0o755)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        executable = relative.parts[:3] == ("usr", "local", "bin") or relative.parts[:2] == ("kind", "bin")
        target.chmod(0o755 if executable else 0o644)
        written.append(str(relative))
    return written


def enable_cdi(containerd_config: str) -> str:
    """kind's containerd config (version 2 schema) with CDI switched on explicitly.

    containerd 2.x enables CDI by default, but saying so keeps a node on another containerd honest;
    the spec dirs are containerd's defaults (/etc/cdi, /var/run/cdi), where DRA drivers write."""
    header = '[plugins."io.containerd.grpc.v1.cri"]\n'
    if header not in containerd_config:
        raise BadInput(
            'kind\'s containerd config has no [plugins."io.containerd.grpc.v1.cri"] table', "use a kind release"
        )
    if "enable_cdi" in containerd_config:
        return containerd_config
    addition = (
        "  # device-conformance: CDI for DRA drivers and device plugins\n"
        '  enable_cdi = true\n  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n'
    )
    return containerd_config.replace(header, header + addition, 1)


def sandbox_image(containerd_config: str) -> str:
    """The pause image kind's containerd config pins (`sandbox_image = "registry.k8s.io/pause:3.10"`)."""
    match = re.search(r'^\s*sandbox_image\s*=\s*"([^"]+)"', containerd_config, re.M)
    if match is None:
        raise BadInput("kind's containerd config names no sandbox_image", "use a kind release")
    return match.group(1)
