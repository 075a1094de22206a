"""Check rendered kind configs with kind's own (internal) loader: see validate/main.go for what it runs.

The program is built once per kind version inside a copy of that version's module source from the Go
module proxy (internal packages are importable only from within the module), and cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.go_tmpdir import which_go

PROGRAM = "dc-kind-validate"
# The node image's containerd config as kind ships it in its base image (the file kind patches).
BASE_CONTAINERD = "images/base/files/etc/containerd/config.toml"


@dataclass(frozen=True)
class NodeView:
    name: str
    role: str
    image: str
    kubeadm: str
    mounts: list[dict]


@dataclass(frozen=True)
class KindView:
    """What kind would make of a config: per node the final kubeadm config, and containerd's config."""

    name: str
    nodes: list[NodeView]
    containerd: str


class KindValidator:
    def __init__(self, binary: Path, module_dir: Path) -> None:
        self.binary = binary
        self.module_dir = module_dir

    @classmethod
    def build(cls, kind_version: str) -> KindValidator:
        go = which_go()
        if go is None:
            raise BadInput("checking kind configs with kind's loader needs Go", "install Go (https://go.dev/dl)")
        source = (resources.files("device_conformance.providers.kind") / "validate" / "main.go").read_bytes()
        tag = hashlib.sha256(source).hexdigest()[:12]
        home = cache_root() / "tools" / f"kind-validate-{kind_version}-{tag}"
        binary = home / PROGRAM
        module = home / "kind"
        if binary.exists() and module.is_dir():
            return cls(binary, module)
        env = {**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0"}
        download = subprocess.run(
            [go, "mod", "download", "-json", f"sigs.k8s.io/kind@{kind_version}"],
            capture_output=True, text=True, env=env, timeout=600, check=False,
        )  # fmt: skip
        if download.returncode != 0:
            raise ConformanceError(f"go mod download sigs.k8s.io/kind@{kind_version} failed:\n{download.stdout}")
        origin = Path(json.loads(download.stdout)["Dir"])
        partial = home.with_name(f"{home.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(origin, partial / "kind")
        for path in (partial / "kind").rglob("*"):  # the module cache is read-only
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
        (partial / "kind").chmod(0o755)
        # Under pkg/cluster/: the only place from which both pkg/internal and pkg/cluster/internal import.
        command_dir = partial / "kind" / "pkg" / "cluster" / PROGRAM
        command_dir.mkdir(parents=True)
        (command_dir / "main.go").write_bytes(source)
        build = subprocess.run(
            [go, "build", "-o", str(partial / PROGRAM), f"./pkg/cluster/{PROGRAM}"],
            cwd=partial / "kind", capture_output=True, text=True, env=env, timeout=900, check=False,
        )  # fmt: skip
        if build.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise ConformanceError(f"building {PROGRAM} against kind {kind_version} failed:\n{build.stderr}")
        os.replace(partial, home)
        return cls(binary, module)

    def check(self, config_file: Path, k8s_version: str) -> KindView:
        """KindView of the config, or BadInput with kind's own error message."""
        proc = subprocess.run(
            [str(self.binary), str(config_file), k8s_version, str(self.module_dir / BASE_CONTAINERD)],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        if proc.returncode != 0:
            raise BadInput(
                f"kind rejects {config_file}: {proc.stderr.strip()}",
                "fix the template in kind-configs/ or the renderer",
            )
        raw = json.loads(proc.stdout)
        nodes = [NodeView(n["name"], n["role"], n["image"], n["kubeadm"], n.get("mounts") or []) for n in raw["nodes"]]
        return KindView(raw["name"], nodes, raw["containerd"])
