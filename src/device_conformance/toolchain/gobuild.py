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
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.go_tmpdir import which_go

VERSION_PACKAGES = ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version")
PROGRESS_EVERY_SECONDS = 15

# Staging modules that k8s.io/kubernetes replaces (and its go.work uses) but that no server binary imports:
# examples, never required by k8s.io/kubernetes's go.mod (v1.37.1, v1.38.0-beta.0). The Go module proxy
# answers 403 for them at some versions (v0.31.4, v0.33.13, v0.34.10, v0.35.8, v0.37.2, checked 2026-11-27),
# so builds and `k8s-source get` leave them out.
UNBUILT_STAGING = ("k8s.io/sample-cli-plugin", "k8s.io/sample-controller")
# Required by k8s.io/kubernetes's go.mod for its tests but imported by no server binary: k8s.io/sample-apiserver
# (an example; the proxy answered 403 for it at v0.31.4 and v0.33.13, 2026-11-28) and, from 1.38, k8s.io/ktesting
# (imported at v1.38.0-beta.0 only by */testing packages: cmd/kube-apiserver/app/testing, pkg/kubelet/runtimeclass/
# testing, pkg/controlplane/apiserver/samples/generic/server/testing; 403 for its .mod and .zip, 2026-11-28).
# The wrapper module replaces each with an empty local module (UNIMPORTED_DIR): the module graph needs its go.mod,
# no build needs its packages, so the proxy's answer for it cannot block a release. build_requirements does not
# ask the proxy for them.
NOT_IMPORTED_BY_SERVER_BINARIES = (*UNBUILT_STAGING, "k8s.io/sample-apiserver", "k8s.io/ktesting")
# Where the wrapper module's stand-ins for NOT_IMPORTED_BY_SERVER_BINARIES live, relative to it.
UNIMPORTED_DIR = "unimported"
_STUB_REPLACE_RE = re.compile(rf"^\s*(\S+) => \./{UNIMPORTED_DIR}/(\S+)\s*$", re.M)

# `go` refuses a module whose go.mod needs a newer Go while GOTOOLCHAIN=local (the Go distribution's go.env
# default here): "k8s.io/kubernetes@v1.38.0-beta.0 requires go >= 1.27.0 (running go 1.26.8; GOTOOLCHAIN=local)".
_TOO_NEW_RE = re.compile(r"requires go >= (\d+(?:\.\d+)*)")
# A module the proxy refuses during a build: "<file>: sigs.k8s.io/iptables-wrappers@v1.0.0: reading
# https://proxy.golang.org/sigs.k8s.io/iptables-wrappers/@v/v1.0.0.zip: 403 Forbidden".
_REFUSED_RE = re.compile(r"(\S+@v\S+): reading https?://\S+: 403 Forbidden")
_GO_LINE_RE = re.compile(r"^go (\S+)\s*$", re.M)
# The toolchain chosen for a Kubernetes version whose go.mod needs a newer Go than the local one (tag -> name).
_TOOLCHAINS: dict[str, str] = {}


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


def go_version_key(text: str) -> tuple[int, ...]:
    """Go versions compared as numbers: "go1.26.8" < "1.27" == "1.27.0" < "go1.27.3" (pre-release toolchains
    such as go1.27rc1 count as their line's .0)."""
    numbers = re.match(r"^(?:go)?(\d+(?:\.\d+)*)", text.strip())
    parts = [int(part) for part in numbers.group(1).split(".")] if numbers else [0]
    return tuple([*parts, 0, 0, 0][:3])


_LOCAL_GO: dict[str, str] = {}


def local_go_version(go: str) -> str:
    """The version of the `go` on PATH itself (GOTOOLCHAIN=local), e.g. "go1.26.8"."""
    if go not in _LOCAL_GO:
        out = subprocess.run(
            [go, "env", "GOVERSION"],
            env={**os.environ, "GOTOOLCHAIN": "local"},
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        _LOCAL_GO[go] = out or "go0"
    return _LOCAL_GO[go]


def toolchain_for(required: str, local: str, go_version_file: str | None) -> str | None:
    """The GOTOOLCHAIN a module needing Go `required` (its go.mod's go line) builds with: None when the
    local go is new enough; else the version upstream builds that tree with (its .go-version file,
    hack/lib/golang.sh sets GOTOOLCHAIN=go$(cat .go-version)) when it meets `required`, else `required`.
    The go command fetches that toolchain from the Go module proxy (module golang.org/toolchain) once."""
    if go_version_key(local) >= go_version_key(required):
        return None
    pinned = (go_version_file or "").strip()
    if pinned and go_version_key(pinned) >= go_version_key(required):
        return f"go{pinned}"
    return f"go{required}"


def toolchain_env(toolchain: str | None) -> dict[str, str]:
    """The environment entries that select `toolchain` (none: the go on PATH as configured)."""
    return {"GOTOOLCHAIN": toolchain} if toolchain else {}


def module_toolchain(go: str, workdir: Path) -> str | None:
    """The toolchain a build in `workdir` needs when its go.mod's go line is newer than the local go: one
    already chosen for a Kubernetes version (download_modules) that meets it, else what toolchain_for says."""
    try:
        line = _GO_LINE_RE.search((workdir / "go.mod").read_text())
    except OSError:
        return None
    if line is None or go_version_key(local_go_version(go)) >= go_version_key(line.group(1)):
        return None
    chosen = [name for name in _TOOLCHAINS.values() if go_version_key(name) >= go_version_key(line.group(1))]
    return min(chosen, key=go_version_key) if chosen else toolchain_for(line.group(1), local_go_version(go), None)


def chosen_toolchain(version: KubeVersion) -> str | None:
    """The toolchain download_modules chose for `version` (None: the local go serves it)."""
    return _TOOLCHAINS.get(version.tag)


def _zip_go_version(record: dict[str, Any]) -> str | None:
    """The .go-version file in a downloaded module zip (k8s.io/kubernetes has one; staging modules do not)."""
    try:
        with zipfile.ZipFile(record["Zip"]) as archive:
            return archive.read(f"{record['Path']}@{record['Version']}/.go-version").decode().strip()
    except (KeyError, OSError, zipfile.BadZipFile):
        return None


def module_gomod(version: KubeVersion) -> str:
    """The go.mod text of k8s.io/kubernetes at this version (fails clearly for unknown versions)."""
    (kubernetes,) = download_modules([f"k8s.io/kubernetes@{version.tag}"], version)
    return Path(kubernetes["GoMod"]).read_text()


def download_modules(specs: Sequence[str], version: KubeVersion) -> list[dict[str, Any]]:
    """`go mod download -json` of k8s.io/kubernetes module@version specs: one record each (Path, Version, Dir,
    GoMod, ...). Fails clearly for a version the proxy does not serve."""
    records, problem = download_for_version(specs, version, go_binary())
    if problem is not None:
        raise BadInput(
            f"K8S_VERSION={version} cannot be fetched: the Go module proxy answers: {problem}",
            f"pick a released version the proxy serves (default {DEFAULT_K8S_VERSION}; "
            "`go list -m -versions k8s.io/kubernetes` lists them), or set K8S_BIN_DIR to binaries you already have",
        )
    return records


def download_for_version(
    specs: Sequence[str], version: KubeVersion, go: str
) -> tuple[list[dict[str, Any]], str | None]:
    """go_mod_download of module@version specs that belong to a Kubernetes version's build, with the toolchain
    that version needs: when `go` is too old for a module (GOTOOLCHAIN=local: "requires go >= 1.27.0"), again
    with upstream's toolchain for the version (its .go-version), remembered for later calls of the version."""
    toolchain = _TOOLCHAINS.get(version.tag)
    records, problem = go_mod_download(specs, go, toolchain)
    too_new = _TOO_NEW_RE.search(problem or "")
    if too_new and toolchain is None:
        pinned = next((v for v in map(_zip_go_version, (r for r in records if "Zip" in r)) if v), None)
        toolchain = toolchain_for(too_new.group(1), local_go_version(go), pinned)
        if toolchain is not None:
            _TOOLCHAINS[version.tag] = toolchain
            records, problem = go_mod_download(specs, go, toolchain)
    return records, problem


def listed_versions(go: str, module: str = "k8s.io/kubernetes") -> tuple[list[str], str | None]:
    """The versions the Go module proxy lists for `module` (`go list -m -json -versions`, outside any module or
    workspace), and what went wrong (None when the command succeeded). The list may lack versions the proxy
    still serves: ask for one with go_mod_download."""
    with tempfile.TemporaryDirectory(prefix="dc-go-list-") as neutral:
        proc = subprocess.run(
            [go, "list", "-m", "-json", "-versions", module],
            cwd=neutral,
            env={**os.environ, "GOWORK": "off", "GOFLAGS": without_mod_flag(os.environ.get("GOFLAGS", ""))},
            capture_output=True,
            text=True,
            check=False,
        )
    records = json_stream(proc.stdout) if proc.returncode == 0 else []
    if not records:
        return [], proc.stderr.strip() or f"go list -m -versions {module} printed nothing"
    return list(records[0].get("Versions", [])), None


def build_requirements(version: KubeVersion, kubernetes_gomod: str) -> list[str]:
    """The module@version specs a build of the server binaries at `version` may fetch: every staging module
    the wrapper module replaces (staging_modules) at the version's staging tag, and every other module
    k8s.io/kubernetes's go.mod requires (direct and indirect), at the version it names. A superset of what
    the four binaries import (less NOT_IMPORTED_BY_SERVER_BINARIES): another module no server binary imports
    may be among them."""
    staging = set(staging_modules(kubernetes_gomod)) - set(NOT_IMPORTED_BY_SERVER_BINARIES)
    replaced = set(re.findall(r"^\s*(k8s\.io/\S+) => \./staging/", kubernetes_gomod, re.M))
    specs = [f"{name}@{version.staging_tag}" for name in sorted(staging)]
    for block in re.findall(r"^require \((.*?)^\)", kubernetes_gomod, re.M | re.S):
        for line in block.splitlines():
            fields = line.split("//")[0].split()
            if len(fields) == 2 and fields[0] not in replaced:
                specs.append(f"{fields[0]}@{fields[1]}")
    for single in re.findall(r"^require (\S+) (\S+)", kubernetes_gomod, re.M):
        if single[0] not in replaced:
            specs.append(f"{single[0]}@{single[1]}")
    return specs


def go_mod_download(
    specs: Sequence[str], go: str, toolchain: str | None = None
) -> tuple[list[dict[str, Any]], str | None]:
    """`go mod download -json` of module@version specs: the records, and what went wrong (None when each spec
    gave one record without an Error). Runs outside any module or workspace, so only the proxy and the module
    cache are involved; the module cache holds the files read-only. `toolchain`: a GOTOOLCHAIN to run it with."""
    with tempfile.TemporaryDirectory(prefix="dc-go-download-") as neutral:
        proc = subprocess.run(
            [go, "mod", "download", "-json", *specs],
            cwd=neutral,
            env={
                **os.environ,
                "GOWORK": "off",
                "GOFLAGS": without_mod_flag(os.environ.get("GOFLAGS", "")),
                **toolchain_env(toolchain),
            },
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
    """The staging modules k8s.io/kubernetes replaces with ./staging/src/k8s.io/<name> that a build of the
    server binaries can need: 31 of the 33 in 1.37 (UNBUILT_STAGING are left out)."""
    replaced = set(re.findall(r"^\s*(k8s\.io/\S+) => \./staging/", kubernetes_gomod, re.M))
    return sorted(replaced - set(UNBUILT_STAGING))


def wrapper_gomod(version: KubeVersion, kubernetes_gomod: str) -> str:
    """go.mod of a module that builds k8s.io/kubernetes commands with published staging modules."""
    go_line = _GO_LINE_RE.search(kubernetes_gomod)
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
    lines += [
        f"\t{name} => ./{UNIMPORTED_DIR}/{name}"
        if name in NOT_IMPORTED_BY_SERVER_BINARIES
        else f"\t{name} => {name} {version.staging_tag}"
        for name in staging
    ]
    lines += [")", ""]
    return "\n".join(lines)


def write_unimported_stubs(module_dir: Path, gomod: str) -> list[str]:
    """Write the empty stand-in module of every `=> ./unimported/<name>` replace in the wrapper go.mod `gomod`
    into module_dir; return their module paths."""
    stubs = []
    for name, relative in _STUB_REPLACE_RE.findall(gomod):
        stub = module_dir / UNIMPORTED_DIR / relative
        stub.mkdir(parents=True, exist_ok=True)
        (stub / "go.mod").write_text(
            f"// A stand-in written by device-conformance: no server binary imports {name}'s packages.\nmodule {name}\n"
        )
        stubs.append(name)
    return stubs


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
    kubernetes_gomod = module_gomod(version)  # refuses an unknown version before we write anything
    gomod = wrapper_gomod(version, kubernetes_gomod)
    workdir = cache_root() / "gobuild" / version.tag
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "go.mod").write_text(gomod)
    write_unimported_stubs(workdir, gomod)
    argv = [go, "build", "-v", "-ldflags", version_ldflags(version), "-o", str(target) + "/"]
    argv += [f"k8s.io/kubernetes/cmd/{name}" for name in components]
    toolchain = chosen_toolchain(version)
    if toolchain is not None:
        what = f"k8s.io/kubernetes@{version.tag}"
        progress(toolchain_message(what, kubernetes_gomod, local_go_version(go), toolchain))
    progress(
        f"building Kubernetes {version.tag} from the Go module proxy ({', '.join(components)}); "
        "a cold build takes many minutes"
    )
    packages = [f"k8s.io/kubernetes/cmd/{name}" for name in components]
    env = {"GOFLAGS": "-mod=mod", **toolchain_env(toolchain)}
    run_go(argv, workdir, f"Kubernetes {version.tag}", progress, env=env, packages=packages)


def toolchain_message(what: str, gomod: str, local: str, toolchain: str) -> str:
    """The progress line saying that a build uses a fetched Go toolchain, and why."""
    go_line = _GO_LINE_RE.search(gomod)
    required = go_line.group(1) if go_line else "?"
    return (
        f"{what} requires go >= {required} (its go.mod) and the local go is {local}: building with {toolchain} "
        f"(GOTOOLCHAIN={toolchain}; the go command fetches it once from the Go module proxy, "
        f"golang.org/toolchain@v0.0.1-{toolchain}.<os>-<arch>)"
    )


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
    if "GOTOOLCHAIN" not in env:  # e.g. certify's wrapper modules of a version that needs a newer Go
        env.update(toolchain_env(module_toolchain(argv[0], workdir)))
    started = time.monotonic()
    last_report = started
    compiled = 0
    tail: list[str] = []
    refused: set[str] = set()
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
            refused.update(_REFUSED_RE.findall(line))
            if not line.startswith("go: "):
                compiled += 1
            now = time.monotonic()
            if now - last_report >= PROGRESS_EVERY_SECONDS:
                last_report = now
                progress(progress_line(label, compiled, total[0] if total else None, now - started))
    if proc.returncode != 0 and refused:
        raise BadInput(
            f"go build of {label} failed: the Go module proxy refuses modules it needs (403 This module version is "
            f"not available): {', '.join(sorted(refused))}",
            "this version cannot be built from the Go module proxy here: set K8S_BIN_DIR to its release binaries "
            "(dl.k8s.io), build a checkout with K8S_SOURCE, or pick another version",
        )
    if proc.returncode != 0:
        raise BadInput(
            f"go build of {label} failed (exit {proc.returncode}):\n" + "\n".join(tail),
            "check disk space and the Go module proxy; rerun to resume (module and build caches are kept)",
        )
    elapsed = time.monotonic() - started
    progress(f"built {label} in {elapsed:.0f}s")
    return elapsed
