"""The Go-built parts of a node image besides Kubernetes and containerd: CNI plugins, etcd and CoreDNS,
each built from the Go module proxy at the version kind's recipe or kubeadm asks for, cached per version.

All are static (CGO off), so they run in any image. etcd's and CoreDNS's own modules cannot be
`go install`ed (etcd's server/go.mod has replace directives; CoreDNS's main links ~60 plugins and their
cloud SDKs), so each is built from a small wrapper module, like the Kubernetes binaries (gobuild.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from device_conformance.toolchain.cache import BinarySet, Progress, cache_root, ensure_cached
from device_conformance.toolchain.gobuild import go_binary, run_go
from device_conformance.toolchain.nodeimage.cache import content_key

CNI_MODULE = "github.com/containernetworking/plugins"
ETCD_MODULE = "go.etcd.io/etcd/server/v3"
COREDNS_MODULE = "github.com/coredns/coredns"
STATIC_ENV = {"CGO_ENABLED": "0"}
BUILD_FLAGS = ("-trimpath", "-ldflags=-s -w")

# The plugins kubeadm's Corefile uses (k8s.io/kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go:
# errors, health, ready, kubernetes, prometheus, forward, cache, loop, reload, loadbalance) plus log and
# hosts for users' edits. CoreDNS's core/plugin/zplugin.go registers all ~60 by import; this registers these.
COREDNS_PLUGINS = (
    "cache", "errors", "forward", "health", "hosts", "kubernetes", "loadbalance", "log", "loop", "metrics",
    "ready", "reload",
)  # fmt: skip


@dataclass(frozen=True)
class GoProgram:
    """A Go build of one module version: the wrapper module's go.mod/main.go and the packages to build."""

    name: str
    version: str
    require: str  # module path the wrapper requires at `version`
    packages: tuple[str, ...]
    main_go: str = ""  # a wrapper main package; empty: build `packages` (main packages of the module)
    outputs: tuple[str, ...] = ()

    def gomod(self) -> str:
        return f"module local/{self.name}-build\n\ngo 1.26.0\n\nrequire {self.require} {self.version}\n"


def cni_program(version: str, plugins: Mapping[str, str]) -> GoProgram:
    """The CNI plugins kind's base image installs (its Dockerfile's build-cni stage), at `version`."""
    names = tuple(sorted(plugins))
    return GoProgram(
        "cni-plugins", version, CNI_MODULE, tuple(f"{CNI_MODULE}/{plugins[n]}" for n in names), outputs=names
    )


def etcd_program(version: str) -> GoProgram:
    """etcd's server binary (its module root is `package main`, see server/main.go)."""
    return GoProgram("etcd", version, ETCD_MODULE, (ETCD_MODULE,), outputs=("etcd",))


def coredns_program(version: str) -> GoProgram:
    imports = "\n".join(f'\t_ "{COREDNS_MODULE}/plugin/{plugin}"' for plugin in COREDNS_PLUGINS)
    main = (
        "// CoreDNS with the plugins kubeadm's Corefile uses (see toolchain/nodeimage/components.py).\n"
        f'package main\n\nimport (\n\t"{COREDNS_MODULE}/coremain"\n\n{imports}\n)\n\nfunc main() {{ coremain.Run() }}\n'
    )
    return GoProgram("coredns", version, COREDNS_MODULE, (".",), main_go=main, outputs=("coredns",))


def program_dir(program: GoProgram) -> Path:
    """The cache entry of `program` (keyed by its full recipe, so a changed plugin list is a new entry)."""
    key = content_key(
        {"gomod": program.gomod(), "main": program.main_go, "packages": program.packages, "flags": BUILD_FLAGS}
    )
    return cache_root() / program.name / f"{program.version}-{key[:8]}"


def ensure_program(program: GoProgram, progress: Progress = print) -> BinarySet[str]:
    """The binaries of `program`, built from the Go module proxy when not cached."""
    cached = program_dir(program)

    def build(staging: Path) -> str:
        go = go_binary(f"{program.name} {program.version}", alternative=None)
        workdir = cache_root() / "gobuild" / f"{program.name}-{program.version}"
        workdir.mkdir(parents=True, exist_ok=True)
        (workdir / "go.mod").write_text(program.gomod())
        (workdir / "go.sum").unlink(missing_ok=True)  # -mod=mod records what this go.mod needs
        main = workdir / "main.go"
        if program.main_go:
            main.write_text(program.main_go)
        else:
            main.unlink(missing_ok=True)
        # One binary: named by -o (go would name etcd's `server`, after its module path); several: by package.
        out = str(staging / program.outputs[0]) if len(program.outputs) == 1 else str(staging) + "/"
        argv = [go, "build", "-v", *BUILD_FLAGS, "-o", out, *program.packages]
        progress(f"building {program.name} {program.version} from the Go module proxy")
        env = {**STATIC_ENV, "GOFLAGS": "-mod=mod"}
        run_go(
            argv,
            workdir,
            f"{program.name} {program.version}",
            progress,
            env=env,
            packages=program.packages,
            flags=BUILD_FLAGS,
        )
        return "go build"

    return BinarySet(program.version, cached, ensure_cached(cached, program.outputs, build, progress))
