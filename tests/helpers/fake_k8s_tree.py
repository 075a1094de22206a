"""Small stand-ins for Kubernetes source trees and the module cache (no download, no build)."""

from __future__ import annotations

from pathlib import Path

STAGING = ("k8s.io/api", "k8s.io/kubelet")
COMMANDS = ("kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def kubernetes_gomod(staging: tuple[str, ...] = STAGING) -> str:
    replaces = "".join(f"\t{name} => ./staging/src/{name}\n" for name in staging)
    requires = "".join(f"\t{name} v0.0.0\n" for name in staging)
    return f"module k8s.io/kubernetes\n\ngo 1.22\n\nrequire (\n{requires})\n\nreplace (\n{replaces})\n"


def go_work(staging: tuple[str, ...]) -> str:
    uses = "".join(f"\t./staging/src/{name}\n" for name in staging)
    return f"go 1.22\n\nuse (\n\t.\n{uses})\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def source_tree(root: Path, staging: tuple[str, ...] = STAGING, *, version_defs: str | None = None) -> Path:
    """A tree `go list` and `go build` accept: k8s.io/kubernetes with staging modules in a workspace, the
    four commands importing pkg/kubelet/cm/devicemanager (kubelet) or pkg/util (the others)."""
    write(root / "go.mod", kubernetes_gomod(staging))
    write(root / "go.work", go_work(staging))
    for name in staging:
        write(root / "staging/src" / name / "go.mod", f"module {name}\n\ngo 1.22\n")
        write(root / "staging/src" / name / "doc.go", f"package {name.rsplit('/', 1)[-1].replace('-', '')}\n")
    write(root / "pkg/kubelet/cm/devicemanager/manager.go", 'package devicemanager\n\nconst Checkpoint = "on"\n')
    write(root / "pkg/kubelet/cm/devicemanager/manager_test.go", "package devicemanager\n")
    write(root / "pkg/util/util.go", 'package util\n\nconst Name = "util"\n')
    write(root / "pkg/unused/unused.go", "package unused\n")
    write(root / "README.md", "# Kubernetes\n")
    for command in COMMANDS:
        imported = "pkg/kubelet/cm/devicemanager" if command == "kubelet" else "pkg/util"
        write(
            root / "cmd" / command / "main.go",
            f'package main\n\nimport _ "k8s.io/kubernetes/{imported}"\n\nfunc main() {{}}\n',
        )
    if version_defs is not None:
        write(root / ".kube-version-defs", f"KUBE_GIT_VERSION='{version_defs}'\n")
    return root


def module_cache(
    root: Path, version: str = "v1.37.1", staging_version: str = "v0.37.1", not_served: tuple[str, ...] = ()
) -> tuple[dict, list[dict]]:
    """A fake module cache holding k8s.io/kubernetes (go.mod replaces api and kubelet, go.work also uses
    sample-controller, as 1.37's go.work uses modules the commands never import) and its staging modules;
    returns the `go mod download -json` records. `not_served`: more staging modules go.mod replaces, with no
    record (the proxy refused them)."""
    kubernetes = root / f"k8s.io/kubernetes@{version}"
    write(kubernetes / "go.mod", kubernetes_gomod((*STAGING, *not_served)))
    write(kubernetes / "go.work", go_work((*STAGING, "k8s.io/sample-controller")))
    write(kubernetes / "pkg/kubelet/cm/devicemanager/manager.go", "package devicemanager\n")
    write(kubernetes / "hack/update-codegen.sh", "#!/bin/sh\n")
    write(kubernetes / "staging/README.md", "staging\n")
    records = []
    for name in (*STAGING, "k8s.io/sample-controller"):
        directory = root / f"{name}@{staging_version}"
        write(directory / "go.mod", f"module {name}\n")
        write(directory / "doc.go", "package x\n")
        records.append({"Path": name, "Version": staging_version, "Dir": str(directory)})
    for path in root.rglob("*"):
        path.chmod(0o555 if path.is_dir() else 0o444)  # as the module cache keeps them
    record = {
        "Path": "k8s.io/kubernetes",
        "Version": version,
        "Dir": str(kubernetes),
        "GoMod": str(kubernetes / "go.mod"),
    }
    return record, records
