"""Build Kubernetes server binaries from the Go module proxy (module k8s.io/kubernetes + staging).

`go install k8s.io/kubernetes/cmd/kubelet@vX` is refused because the module's go.mod replaces its
staging modules with ./staging paths; a wrapper module that requires k8s.io/kubernetes and replaces
every staging module with its published v0.N.P tag builds them (kubernetes#79384).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from device_conformance.errors import BadInput
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.go_tmpdir import which_go

VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
PROGRESS_EVERY_SECONDS = 15


K8S_ALTERNATIVE = (
    "set K8S_BIN_DIR to a directory holding kubelet, kube-apiserver, kube-controller-manager and kube-scheduler"
)


def go_binary(what: str = "Kubernetes binaries", alternative: str | None = K8S_ALTERNATIVE) -> str:
    go = which_go()
    if go is None:
        raise BadInput(
            f"no {what} are available and no Go toolchain is on PATH to build them",
            "install Go >= 1.26 (https://go.dev/dl)" + (f", or {alternative}" if alternative else ""),
        )
    return go


def module_gomod(version: KubeVersion) -> str:
    """The go.mod text of k8s.io/kubernetes at this version (fails clearly for unknown versions)."""
    (kubernetes,) = download_modules([f"k8s.io/kubernetes@{version.tag}"], version)
    return Path(kubernetes["GoMod"]).read_text()


def download_modules(specs: Sequence[str], version: KubeVersion) -> list[dict[str, Any]]:
    """`go mod download -json` of k8s.io/kubernetes module@version specs: one record each (Path, Version, Dir,
    GoMod, ...). Fails clearly for a version the proxy does not serve."""
    records, problem = go_mod_download(specs, go_binary())
    if problem is not None:
        raise BadInput(
            f"K8S_VERSION={version} cannot be fetched: the Go module proxy answers: {problem}",
            f"pick a released version the proxy serves (default {DEFAULT_K8S_VERSION}; "
            "`go list -m -versions k8s.io/kubernetes` lists them), or set K8S_BIN_DIR to binaries you already have",
        )
    return records


def go_mod_download(specs: Sequence[str], go: str) -> tuple[list[dict[str, Any]], str | None]:
    """`go mod download -json` of module@version specs: the records, and what went wrong (None when each spec
    gave one record without an Error). Runs outside any module or workspace, so only the proxy and the module
    cache are involved; the module cache holds the files read-only."""
    with tempfile.TemporaryDirectory(prefix="dc-go-download-") as neutral:
        proc = subprocess.run(
            [go, "mod", "download", "-json", *specs],
            cwd=neutral,
            env={**os.environ, "GOWORK": "off", "GOFLAGS": without_mod_flag(os.environ.get("GOFLAGS", ""))},
            capture_output=True,
            text=True,
            check=False,
        )
    records = json_stream(proc.stdout)
    failed = [f"{r.get('Path')}@{r.get('Version')}: {r['Error']}" for r in records if "Error" in r]
    if proc.returncode != 0 or failed or len(records) != len(specs):
        return records, "; ".join(failed) or proc.stderr.strip()
    return records, None


def json_stream(text: str) -> list[dict[str, Any]]:
    """The concatenated JSON objects `go ... -json` prints."""
    decoder = json.JSONDecoder()
    records, index = [], 0
    while True:
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            return records
        record, index = decoder.raw_decode(text, index)
        records.append(record)


def without_mod_flag(goflags: str) -> str:
    """GOFLAGS without -mod=...: workspace builds and `go mod download` refuse -mod=mod."""
    return " ".join(flag for flag in goflags.split() if not flag.startswith(("-mod=", "--mod=")))


def staging_modules(kubernetes_gomod: str) -> list[str]:
    """The staging modules k8s.io/kubernetes replaces with ./staging/src/k8s.io/<name> (33 in 1.37)."""
    return sorted(set(re.findall(r"^\s*(k8s\.io/\S+) => \./staging/", kubernetes_gomod, re.M)))


def wrapper_gomod(version: KubeVersion, kubernetes_gomod: str) -> str:
    """go.mod of a module that builds k8s.io/kubernetes commands with published staging modules."""
    go_line = re.search(r"^go (\S+)$", kubernetes_gomod, re.M)
    godebug = re.search(r"^godebug (\S+)$", kubernetes_gomod, re.M)
    staging = staging_modules(kubernetes_gomod)
    if not staging:
        raise BadInput(
            f"k8s.io/kubernetes@{version.tag} has no staging replace directives",
            "this version predates module builds; use K8S_BIN_DIR with prebuilt binaries",
        )
    lines = ["module local/k8s-build", "", f"go {go_line.group(1) if go_line else '1.26.0'}"]
    if godebug:
        lines += ["", f"godebug {godebug.group(1)}"]
    lines += ["", f"require k8s.io/kubernetes {version.tag}", "", "replace ("]
    lines += [f"\t{name} => {name} {version.staging_tag}" for name in staging]
    lines += [")", ""]
    return "\n".join(lines)


def version_ldflags(version: KubeVersion) -> str:
    """Stamp the binaries so Node.status.nodeInfo.kubeletVersion and /version are right."""
    flags = ["-s", "-w"]
    for package in VERSION_PACKAGES:
        flags += [
            f"-X {package}.gitVersion={version.tag}",
            f"-X {package}.gitMajor={version.major}",
            f"-X {package}.gitMinor={version.minor}",
            f"-X {package}.gitTreeState=clean",
        ]
    return " ".join(flags)


def build_kubernetes(
    version: KubeVersion, target: Path, components: Sequence[str], progress: Callable[[str], None]
) -> None:
    """go build the given cmd/<component> binaries of `version` into target/."""
    go = go_binary()
    gomod = wrapper_gomod(version, module_gomod(version))  # refuses an unknown version before we write anything
    workdir = cache_root() / "gobuild" / version.tag
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "go.mod").write_text(gomod)
    argv = [go, "build", "-v", "-ldflags", version_ldflags(version), "-o", str(target) + "/"]
    argv += [f"k8s.io/kubernetes/cmd/{name}" for name in components]
    progress(
        f"building Kubernetes {version.tag} from the Go module proxy ({', '.join(components)}); "
        "a cold build takes many minutes"
    )
    packages = [f"k8s.io/kubernetes/cmd/{name}" for name in components]
    run_go(argv, workdir, f"Kubernetes {version.tag}", progress, env={"GOFLAGS": "-mod=mod"}, packages=packages)


def stale_packages(go: str, workdir: Path, flags: Sequence[str], packages: Sequence[str], env: dict[str, str]) -> int:
    """How many packages a `go build` of `packages` will compile: go list's Stale says which are not in the
    build cache (on a warm cache only what changed). Raises on any failure: the count is then unknown."""
    out = subprocess.run(
        [go, "list", *flags, "-deps", "-f", "{{if .Stale}}{{.ImportPath}}{{end}}", *packages],
        cwd=workdir, env=env, capture_output=True, text=True, timeout=600, check=True,
    ).stdout  # fmt: skip
    return sum(1 for line in out.splitlines() if line.strip())


def progress_line(label: str, compiled: int, total: int | None, elapsed: float) -> str:
    """`compiled` of `total` packages with a percentage and the time left at the rate so far
    (only a count while the total is not known yet)."""
    if not total:
        return f"  building {label}: {compiled} packages compiled, {elapsed:.0f}s elapsed"
    done = min(compiled, total)
    percent = min(99, 100 * done // total) if done < total else 99  # 100 % only when go build exits
    left = elapsed / done * (total - done) if done else None
    eta = f"about {_minutes(left)} left" if left is not None else "time left not known yet"
    return f"  building {label}: {done}/{total} packages ({percent}%), {_minutes(elapsed)} elapsed, {eta}"


def _minutes(seconds: float) -> str:
    return f"{int(seconds) // 60}m{int(seconds) % 60:02d}s"


def run_go(
    argv: list[str],
    workdir: Path,
    label: str,
    progress: Callable[[str], None],
    env: dict[str, str] | None = None,
    packages: Sequence[str] = (),
    flags: Sequence[str] = (),
) -> float:
    """Run a `go build`/`go install -v`, reporting progress; returns the seconds it took.

    With `packages` (and the build `flags` that change what is built) the total is counted by go list
    while the build runs, so the progress says n/total, a percentage and the time left."""
    env = {**os.environ, **(env or {})}
    started = time.monotonic()
    last_report = started
    compiled = 0
    tail: list[str] = []
    total: list[int] = []
    if packages:

        def count() -> None:
            try:
                total.append(stale_packages(argv[0], workdir, flags, packages, env))
            except (OSError, subprocess.SubprocessError):
                pass  # progress stays a count

        threading.Thread(target=count, daemon=True).start()
    with subprocess.Popen(
        argv, cwd=workdir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail = ([*tail, line.rstrip()])[-30:]
            if not line.startswith("go: "):
                compiled += 1
            now = time.monotonic()
            if now - last_report >= PROGRESS_EVERY_SECONDS:
                last_report = now
                progress(progress_line(label, compiled, total[0] if total else None, now - started))
    if proc.returncode != 0:
        raise BadInput(
            f"go build of {label} failed (exit {proc.returncode}):\n" + "\n".join(tail),
            "check disk space and the Go module proxy; rerun to resume (module and build caches are kept)",
        )
    elapsed = time.monotonic() - started
    progress(f"built {label} in {elapsed:.0f}s")
    return elapsed
