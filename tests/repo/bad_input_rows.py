"""The bad-input table: wrong inputs a user can give, each tried for real by
test_bad_input_table.py, and docs/bad-input.md rendered from the same rows.

A row is data: the command a user would type (the real `device-conformance` CLI, `pytest suites ...`,
or a fake's `python -m`), the environment it runs with, the exit code, the key line of the one error it
must print (and the start of its fix), and what may be left afterwards. `{tmp}` in a row stands for a
fresh directory of the test, `{port}` for DEVICE_CONFORMANCE_BASE_PORT as the row ran; the doc shows
them as `$TMP` and `$PORT`. Some rows need the world arranged first (a busy
port, a corrupt cache entry, a full disk): `given` names a function of this module that does it.

Regenerate the doc after editing a row: `make docs` (`make test` fails while it is stale).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from device_conformance.expectations.versions import DEFAULT_K8S_VERSION

D = str(DEFAULT_K8S_VERSION)  # the version a row without K8S_VERSION runs, as messages name it
CLI = "device-conformance"  # run as <venv>/bin/device-conformance
PYTEST = "pytest"  # run as <venv>/bin/python -m pytest, in the repository root
PYTHON = "python"  # <venv>/bin/python
SUITE = ["suites/smoke/test_cluster.py", "-p", "no:cacheprovider"]
NOTHING = "nothing (no run directory, cache entry, process or mount)"


@dataclass
class Given:
    """What a `given` function may change before the command runs."""

    tmp: Path
    env: dict[str, str]
    cleanup: ExitStack
    argv_prefix: list[str] = field(default_factory=list)  # e.g. setpriv ... (run as another user)


@dataclass(frozen=True)
class Row:
    input: str  # the wrong input, as a user would describe it
    argv: list[str]  # argv[0] is CLI, PYTEST or PYTHON
    message: str  # the key line of the error (a substring of the output, `{tmp}` expanded)
    fix: str  # the start of what the fix says (a substring of the output)
    exit_code: int
    left: str = NOTHING
    env: dict[str, str] = field(default_factory=dict)
    given: str = ""  # name of a function here that arranges the world (and says how in its docstring)
    needs: str = ""  # "root" (mounts, another user) or "proxy" (the Go module proxy on the network)
    also: tuple[str, ...] = ()  # more substrings the output must hold
    gone: tuple[str, ...] = ()  # paths (with {tmp}) that must not exist afterwards

    def command(self) -> str:
        env = " ".join(f"{name}={_quote(value)}" for name, value in self.env.items())
        words = [{CLI: CLI, PYTEST: "pytest", PYTHON: "python"}.get(self.argv[0], self.argv[0])]
        words += [_quote(word) for word in self.argv[1:] if word not in ("-p", "no:cacheprovider")]
        return " ".join(part for part in (env, " ".join(words)) if part).replace("{tmp}", "$TMP")


def _quote(word: str) -> str:
    return word if word and all(c.isalnum() or c in "-_./=:{},'" for c in word) else json.dumps(word)


# ---- what some rows arrange first ----------------------------------------------------------------------


def fake_binaries(tmp: Path, version: str, names: tuple[str, ...]) -> Path:
    directory = tmp / "bin"
    directory.mkdir(exist_ok=True)
    for name in names:
        (directory / name).write_text(f"#!/bin/sh\necho Kubernetes {version}\n")
        (directory / name).chmod(0o755)
    return directory


def only_kubelet(given: Given) -> None:
    """$TMP/bin holds an executable kubelet only."""
    fake_binaries(given.tmp, f"v{D}", ("kubelet",))


def binaries_of_1_36(given: Given) -> None:
    """$TMP/bin holds four executables that say `Kubernetes v1.36.4` to --version."""
    fake_binaries(given.tmp, "v1.36.4", ("kubelet", "kube-apiserver", "kube-controller-manager", "kube-scheduler"))


def path_without_go(given: Given) -> None:
    """PATH without any directory holding `go` (as for every row that needs no proxy); the cache is empty."""
    dirs = [d for d in given.env.get("PATH", "").split(os.pathsep) if d and not os.access(Path(d, "go"), os.X_OK)]
    given.env["PATH"] = os.pathsep.join(dirs)


def foreign_cache_entry(given: Given) -> None:
    """The cache holds a complete default-version entry (manifest and all) whose binaries are linux/arm64 ELF files,
    as an arm64 machine sharing the cache directory would have filled it; no Go (as for every row without proxy)."""
    from device_conformance.toolchain import binaries, cache

    entry = given.tmp / "cache" / "kubernetes" / f"v{D}"
    entry.mkdir(parents=True)
    arm64 = b"\x7fELF\x02\x01\x01" + bytes(9) + (2).to_bytes(2, "little") + (183).to_bytes(2, "little") + bytes(64)
    for name in binaries.COMPONENTS:
        (entry / name).write_bytes(arm64)
    cache.write_manifest(entry, binaries.COMPONENTS)


def corrupt_cache_entry(given: Given) -> None:
    """The cache holds a default-version entry whose kubelet no longer matches its manifest; no Go to rebuild it."""
    from device_conformance.toolchain import binaries, cache

    entry = given.tmp / "cache" / "kubernetes" / f"v{D}"
    entry.mkdir(parents=True)
    for name in binaries.COMPONENTS:
        (entry / name).write_bytes(name.encode())
    cache.write_manifest(entry, binaries.COMPONENTS)
    (entry / "kubelet").write_bytes(b"truncated")
    path_without_go(given)


def busy_port(given: Given) -> None:
    """A listener holds the first port of the pinned block DEVICE_CONFORMANCE_BASE_PORT."""
    listener = given.cleanup.enter_context(socket.socket())
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    given.env["DEVICE_CONFORMANCE_BASE_PORT"] = str(listener.getsockname()[1])


def full_cache_disk(given: Given) -> None:
    """$TMP/cache is a 4 MiB tmpfs, filled up; unmounted afterwards."""
    disk = given.tmp / "cache"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(disk)], check=True)
    given.cleanup.callback(subprocess.run, ["umount", str(disk)], check=True)
    with (disk / "filler").open("wb") as filler:
        try:
            while True:
                filler.write(b"\0" * (1 << 16))
                filler.flush()
        except OSError:
            pass


def not_root(given: Given) -> None:
    """Run as user nobody (uid 65534). As root: setpriv, keeping only the right to read directories
    (CAP_DAC_READ_SEARCH) so the venv under /root stays usable; run as is when not root already."""
    if os.geteuid() == 0:
        given.argv_prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        given.argv_prefix += ["--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search"]
        given.env["HOME"] = str(given.tmp)


def path_without_etcd(given: Given) -> None:
    """PATH is one directory with links to every command the local provider needs, except etcd."""
    from device_conformance.providers.local import host

    links = given.tmp / "path"
    links.mkdir()
    for command in host.REQUIRED:
        found = shutil.which(command) if not command.startswith("/") else None
        if found and command != "etcd":
            (links / command).symlink_to(found)
    given.env["PATH"] = str(links)


def broken_kubeconfig(given: Given) -> None:
    """$TMP/kubeconfig is not YAML."""
    (given.tmp / "kubeconfig").write_text("apiVersion: v1\nclusters: [\n")


def out_with_other_files(given: Given) -> None:
    """$TMP/out holds notes.txt (not written by a certify run) beside an earlier run's report.md."""
    (given.tmp / "out").mkdir()
    (given.tmp / "out" / "notes.txt").write_text("mine\n")
    (given.tmp / "out" / "report.md").write_text("# an earlier report\n")


def bad_plugin_config(given: Given) -> None:
    """$TMP/plugin.json has a misspelt key (`resource` for `resource_name`); $TMP/sockets is its socket dir."""
    (given.tmp / "sockets").mkdir()
    config = {"resource": "example.com/dev", "socket_dir": str(given.tmp / "sockets"), "control_socket": "c.sock"}
    (given.tmp / "plugin.json").write_text(json.dumps(config))


def bad_driver_config(given: Given) -> None:
    """$TMP/driver.json names no driver (driver_name empty); $TMP/sockets is its registry and plugin dir."""
    sockets = given.tmp / "sockets"
    sockets.mkdir()
    config = {
        "driver_name": "",
        "node_name": "n1",
        "registry_dir": str(sockets),
        "plugin_dir": str(sockets),
        "control_socket": str(sockets / "control.sock"),
        "call_log": str(given.tmp / "calls.jsonl"),
    }
    (given.tmp / "driver.json").write_text(json.dumps(config))


def checkpoint_not_json(given: Given) -> None:
    """$TMP/kubelet_internal_checkpoint holds a truncated JSON document."""
    (given.tmp / "kubelet_internal_checkpoint").write_text('{"Data": {"PodDeviceEntries": [')
    (given.tmp / "kubelet_internal_checkpoint").chmod(stat.S_IRUSR | stat.S_IWUSR)


def unallocated_claim(given: Given) -> None:
    """$TMP/claims.yaml is a resource.k8s.io/v1beta1 ResourceClaim (as `kubectl get -o yaml` prints it on 1.32)
    that the scheduler has not allocated yet: no status.allocation."""
    claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceClaim",
        "metadata": {"name": "gpu", "namespace": "ns-1", "uid": "6f1c2a3e-0000-4000-8000-000000000001"},
        "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": "x.example.com"}]}},
        "status": {},
    }
    (given.tmp / "claims.yaml").write_text(json.dumps(claim))


# ---- the table --------------------------------------------------------------------------------------------

SETUP = [CLI, "setup", "--no-packages"]
UP = [CLI, "cluster", "up"]

ROWS: list[Row] = [
    Row(
        "`--vendor-command` with an unknown placeholder",
        [
            PYTEST,
            *SUITE,
            "--vendor-device-plugin",
            "vendor.com/gpu",
            "--vendor-command",
            "my-plugin --dir {socket_dir}",
        ],
        message="--vendor-command 'my-plugin --dir {socket_dir}' has unknown placeholder {socket_dir}",
        fix="fix: use only {on_node}, {kubelet_dir}, {plugin_dir}",
        exit_code=4,
    ),
    Row(
        "`--vendor-command` naming a socket in `{plugin_dir}` the kubelet cannot dial (over sun_path)",
        [
            PYTEST,
            *SUITE,
            "--vendor-device-plugin",
            "vendor.com/gpu",
            "--vendor-command",
            "my-plugin --socket {plugin_dir}/" + "s" * 76,
        ],
        message="--vendor-command names the socket {plugin_dir}/" + "s" * 76 + ": the kubelet would dial",
        fix="fix: give the socket a name of at most 75 bytes",
        exit_code=4,
    ),
    Row(
        "`--vendor-device-plugin` without `--vendor-command`",
        [PYTEST, *SUITE, "--vendor-device-plugin", "vendor.com/gpu"],
        message="--vendor-device-plugin 'vendor.com/gpu' needs --vendor-command",
        fix='fix: pass --vendor-command "my-binary --socket-dir {plugin_dir} ..."',
        exit_code=4,
    ),
    Row(
        "both `--vendor-device-plugin` and `--vendor-dra-driver`",
        [PYTEST, *SUITE, "--vendor-device-plugin", "vendor.com/gpu", "--vendor-dra-driver", "gpu.vendor.com"],
        env={"VENDOR_COMMAND": "my-subject"},
        message="--vendor-device-plugin 'vendor.com/gpu' and --vendor-dra-driver 'gpu.vendor.com' are both given",
        fix="fix: give one of them",
        exit_code=4,
    ),
    Row(
        "`--vendor-command` without a subject",
        [PYTEST, *SUITE, "--vendor-command", "upstream:sample-device-plugin"],
        message="--vendor-command 'upstream:sample-device-plugin' is given without a subject",
        fix="fix: also pass --vendor-device-plugin RESOURCE",
        exit_code=4,
    ),
    Row(
        "an upstream subject under another name",
        [
            PYTEST,
            *SUITE,
            "--vendor-device-plugin",
            "vendor.com/gpu",
            "--vendor-command",
            "upstream:sample-device-plugin",
        ],
        message="--vendor-device-plugin 'vendor.com/gpu' is not what upstream:sample-device-plugin registers",
        fix="fix: pass --vendor-device-plugin example.com/resource",
        exit_code=4,
    ),
    Row(
        "an upstream subject of the other kind",
        [PYTEST, *SUITE, "--vendor-dra-driver", "gpu.vendor.com", "--vendor-command", "upstream:sample-device-plugin"],
        message="--vendor-command 'upstream:sample-device-plugin' is a device-plugin, but --vendor-dra-driver names",
        fix="fix: pass --vendor-device-plugin example.com/resource with it",
        exit_code=4,
    ),
    Row(
        "`--vendor-device-plugin` with the kind provider",
        [PYTEST, *SUITE, "--provider", "kind", "--vendor-device-plugin", "vendor.com/gpu", "--vendor-command", "x"],
        message="--vendor-device-plugin runs the subject as a process on the host with the node's paths",
        fix="fix: use --provider local, or on kind or an existing cluster --vendor-daemonset NAMESPACE/NAME",
        exit_code=4,
    ),
    Row(
        "both `--vendor-command` and `--vendor-daemonset`",
        [
            PYTEST,
            *SUITE,
            "--provider",
            "kind",
            "--vendor-device-plugin",
            "vendor.com/gpu",
            "--vendor-command",
            "my-plugin",
            "--vendor-daemonset",
            "kube-system/gpu-plugin",
        ],
        message="--vendor-command 'my-plugin' and --vendor-daemonset 'kube-system/gpu-plugin' are both given",
        fix="fix: give --vendor-command with --provider local, or --vendor-daemonset NAMESPACE/NAME",
        exit_code=4,
    ),
    Row(
        "`--vendor-daemonset` with the local provider",
        [PYTEST, *SUITE, "--vendor-device-plugin", "vendor.com/gpu", "--vendor-daemonset", "kube-system/gpu-plugin"],
        message="--vendor-daemonset kube-system/gpu-plugin drives the subject's DaemonSet through the provider's node",
        fix="fix: use --provider kind, or --provider existing with --allow-node-disruption NODE",
        exit_code=4,
    ),
    Row(
        "`--allow-node-disruption` without `--provider existing`",
        [PYTEST, *SUITE, "--provider", "local", "--allow-node-disruption", "worker-1"],
        message="--allow-node-disruption 'worker-1' deploys the node agent on an existing cluster; "
        "the provider is local",
        fix="fix: use --provider existing --kubeconfig PATH (local and kind nodes need no agent)",
        exit_code=4,
    ),
    Row(
        "`--allow-node-disruption` with an empty node name",
        [
            PYTEST,
            *SUITE,
            "--provider",
            "existing",
            "--kubeconfig",
            "{tmp}/kubeconfig",
            "--allow-node-disruption",
            "a,,b",
        ],
        given="broken_kubeconfig",
        message="--allow-node-disruption 'a,,b' has an empty node name",
        fix="fix: give the nodes the suite may disturb, comma-separated",
        exit_code=4,
    ),
    Row(
        "`--node-agent-image` without `--provider existing`",
        [PYTEST, *SUITE, "--provider", "kind", "--node-agent-image", "registry.example/agent:1"],
        message="--node-agent-image 'registry.example/agent:1' is the image of the node agent, which only "
        "--provider existing deploys",
        fix="fix: drop it, or use --provider existing --allow-node-disruption NODE",
        exit_code=4,
    ),
    Row(
        "`--vendor-daemonset` not NAMESPACE/NAME",
        [PYTEST, *SUITE, "--provider", "kind", "--vendor-device-plugin", "vendor.com/gpu", "--vendor-daemonset", "gpu"],
        message="--vendor-daemonset 'gpu' is not NAMESPACE/NAME of a DaemonSet",
        fix="fix: give the namespace and name of the subject's DaemonSet",
        exit_code=4,
    ),
    Row(
        "`--vendor-daemonset upstream:dra-test-driver` under another driver name",
        [
            PYTEST,
            *SUITE,
            "--provider",
            "kind",
            "--vendor-dra-driver",
            "gpu.vendor.com",
            "--vendor-daemonset",
            "upstream:dra-test-driver",
        ],
        message="--vendor-dra-driver 'gpu.vendor.com' is not what upstream:dra-test-driver registers "
        "(dra-driver 'test-driver.cdi.k8s.io')",
        fix="fix: pass --vendor-dra-driver test-driver.cdi.k8s.io",
        exit_code=4,
    ),
    Row(
        "`--vendor-dra-driver` with `--vendor-daemonset` not a driver name",
        [PYTEST, *SUITE, "--provider", "kind", "--vendor-dra-driver", "GPU", "--vendor-daemonset", "gpu/plugin"],
        message="--vendor-dra-driver 'GPU' is not a DRA driver name (a lower-case DNS subdomain",
        fix="fix: give the driver name the driver registers and publishes ResourceSlices for",
        exit_code=4,
    ),
    Row(
        "malformed `K8S_VERSION` (no patch)",
        [PYTEST, *SUITE],
        env={"K8S_VERSION": "1.37"},
        message="K8S_VERSION='1.37' (environment) is not usable: '1.37' is not a Kubernetes release version",
        fix=f"fix: use MAJOR.MINOR.PATCH, e.g. {D}; or unset K8S_VERSION",
        exit_code=4,
    ),
    Row(
        "malformed `--k8s-version` (a word)",
        [CLI, "setup", "--no-packages", "--k8s-version", "latest"],
        message="--k8s-version 'latest' is not usable: 'latest' is not a Kubernetes release version",
        fix="fix: use MAJOR.MINOR.PATCH",
        exit_code=2,
    ),
    Row(
        "unknown `K8S_VERSION` (no such release)",
        SETUP,
        env={"K8S_VERSION": "1.99.0"},
        message="K8S_VERSION=1.99.0 cannot be fetched: the Go module proxy answers: k8s.io/kubernetes@v1.99.0",
        fix="fix: pick a released version the proxy serves",
        exit_code=2,
        left="a lock file in the cache's .locks/; no cache entry, no gobuild/ directory",
        needs="proxy",
    ),
    Row(
        "a version the proxy refuses (1.37.3 here: 403)",
        SETUP,
        env={"K8S_VERSION": "1.37.3"},
        message="K8S_VERSION=1.37.3 cannot be fetched: the Go module proxy answers: k8s.io/kubernetes@v1.37.3",
        fix="fix: pick a released version the proxy serves",
        exit_code=2,
        left="a lock file in the cache's .locks/; no cache entry, no gobuild/ directory",
        needs="proxy",
    ),
    Row(
        "`K8S_BIN_DIR` missing binaries",
        SETUP,
        env={"K8S_BIN_DIR": "{tmp}/bin"},
        given="only_kubelet",
        message="K8S_BIN_DIR={tmp}/bin has no executable kube-apiserver, kube-controller-manager, kube-scheduler",
        fix=f"fix: put kubelet, kube-apiserver, kube-controller-manager, kube-scheduler of v{D} there",
        exit_code=2,
    ),
    Row(
        "`K8S_BIN_DIR` holding another version's binaries",
        SETUP,
        env={"K8S_BIN_DIR": "{tmp}/bin"},
        given="binaries_of_1_36",
        message=f"K8S_BIN_DIR={{tmp}}/bin holds other binaries than Kubernetes v{D}: kubelet v1.36.4, "
        "kube-apiserver v1.36.4",
        fix=f"fix: set K8S_VERSION=1.36.4 to test these, or put the v{D} binaries there",
        exit_code=2,
    ),
    Row(
        "`K8S_BIN_DIR` that does not exist",
        SETUP,
        env={"K8S_BIN_DIR": "{tmp}/no-such-dir"},
        message="K8S_BIN_DIR={tmp}/no-such-dir is not a directory",
        fix="fix: point it at a directory holding kubelet",
        exit_code=2,
    ),
    Row(
        "`cluster build-node-image` not as root",
        [CLI, "cluster", "build-node-image", "--provider", "kind"],
        given="not_root",
        message="building a kind node image needs root (debootstrap, chroot, and a containerd writing the node's "
        "store)",
        fix="fix: run it as root (sudo)",
        exit_code=2,
    ),
    Row(
        "`--k8s-bin-dir` that does not exist, for a kind node image",
        [CLI, "cluster", "build-node-image", "--provider", "kind", "--k8s-bin-dir", "{tmp}/no-such-dir"],
        message="K8S_BIN_DIR={tmp}/no-such-dir is not a directory",
        fix="fix: point it at a directory holding kubelet",
        exit_code=2,
        needs="root",
    ),
    Row(
        "`K8S_SOURCE` that is not a directory",
        SETUP,
        env={"K8S_SOURCE": "{tmp}/no-such-tree"},
        message="K8S_SOURCE='{tmp}/no-such-tree' (environment) is not a directory",
        fix="fix: point it at a Kubernetes source tree",
        exit_code=2,
    ),
    Row(
        "`UPGRADE_FROM` not older than the version under test",
        [PYTEST, *SUITE],
        env={"UPGRADE_FROM": D},
        message=f"UPGRADE_FROM='{D}' (environment) is not older than the version under test {D}",
        fix="fix: set UPGRADE_FROM to a 1.36.x release (e.g. 1.36.4)",
        exit_code=4,
    ),
    Row(
        "`--feature-gates` entry not `[COMPONENT:]NAME=true|false`",
        [PYTEST, *SUITE, "--feature-gates", "kubelet:ResourceHealthStatus=on"],
        message="--feature-gates 'kubelet:ResourceHealthStatus=on': 'kubelet:ResourceHealthStatus=on' is not "
        "[COMPONENT:]NAME=true|false",
        fix="fix: write e.g. kubelet:DRAResourceHealthStatus=true,apiserver:Foo=false",
        exit_code=4,
    ),
    Row(
        "`FEATURE_GATES` naming no component",
        [PYTEST, *SUITE],
        env={"FEATURE_GATES": "kubelt:Foo=true"},
        message="FEATURE_GATES='kubelt:Foo=true' (environment): 'kubelt' is not a component",
        fix="fix: use one of: kubelet, apiserver, controller-manager, scheduler",
        exit_code=4,
    ),
    Row(
        "`--kubelet-arg` setting a flag the provider sets",
        [PYTEST, *SUITE, "--kubelet-arg=--v=4"],
        message="--kubelet-arg '--v=4': the provider sets the kubelet's --v itself",
        fix="fix: use --kubelet-verbosity N",
        exit_code=4,
    ),
    Row(
        "`--kubelet-config` not `KEY=VALUE`",
        [PYTEST, *SUITE, "--kubelet-config", "maxPods"],
        message="--kubelet-config 'maxPods': 'maxPods' is not KEY=VALUE",
        fix="fix: e.g. --kubelet-config maxPods=20",
        exit_code=4,
    ),
    Row(
        "`KUBELET_VERBOSITY` not a number",
        [PYTEST, *SUITE],
        env={"KUBELET_VERBOSITY": "debug"},
        message="KUBELET_VERBOSITY='debug' (environment) is not a log verbosity",
        fix="fix: give klog's level, a whole number 0-99",
        exit_code=4,
    ),
    Row(
        "component knobs with `--provider existing`",
        [PYTEST, *SUITE, "--provider", "existing", "--kubeconfig", "{tmp}/kubeconfig", "--kubelet-verbosity", "4"],
        given="broken_kubeconfig",
        message="--kubelet-verbosity '4' configures the components the suite starts, and provider existing",
        fix="fix: configure the cluster's kubelet yourself, or use --provider local or kind",
        exit_code=4,
    ),
    Row(
        "`CONTAINERD_VERSION` not a containerd 2.x release",
        SETUP,
        env={"CONTAINERD_VERSION": "1.7.22"},
        message="CONTAINERD_VERSION='1.7.22' (environment) is not usable: '1.7.22' is not a containerd 2.x release",
        fix="fix: use a version like v2.3.4",
        exit_code=2,
    ),
    Row(
        "no Go and no binaries",
        SETUP,
        given="path_without_go",
        message="no Kubernetes binaries are available and no Go toolchain is on PATH to build them",
        fix="fix: install Go >= 1.26 (https://go.dev/dl), or set K8S_BIN_DIR",
        exit_code=2,
        left="a lock file in the cache's .locks/; no cache entry, no gobuild/ directory",
    ),
    Row(
        "a binary cache shared with a machine of another architecture",
        SETUP,
        given="foreign_cache_entry",
        message=f"the binary cache entry {{tmp}}/cache/kubernetes/v{D} holds binaries built for another architecture "
        "than this amd64 host: kubelet (arm64), kube-apiserver (arm64), kube-controller-manager (arm64), "
        "kube-scheduler (arm64)",
        fix="fix: give this machine a cache of its own: set DEVICE_CONFORMANCE_CACHE to a directory only amd64 "
        "machines use",
        exit_code=2,
        left="the other machine's entry, untouched; a lock file in .locks/",
    ),
    Row(
        "a corrupt cached binary (and no Go to rebuild it)",
        SETUP,
        given="corrupt_cache_entry",
        message=f"cached binaries in {{tmp}}/cache/kubernetes/v{D} are unusable (kubelet does not match its "
        "recorded sha256 (corrupt or modified)); removing them and fetching again",
        fix="fix: install Go >= 1.26",
        exit_code=2,
        left="the corrupt entry is removed (with Go it is rebuilt); a lock file in .locks/",
        gone=(f"{{tmp}}/cache/kubernetes/v{D}",),
    ),
    Row(
        "a full disk in the cache directory",
        SETUP,
        given="full_cache_disk",
        message=f"the disk of the binary cache {{tmp}}/cache has 0 MiB free; v{D} (kubelet, kube-apiserver, "
        "kube-controller-manager, kube-scheduler) needs about 512 MiB",
        fix="fix: free space there, or set DEVICE_CONFORMANCE_CACHE to a directory on a disk with room",
        exit_code=2,
        left="a lock file in .locks/ (no staging directory); the tmpfs is unmounted by the test",
        needs="root",
    ),
    Row(
        "a busy port range (the pinned block)",
        UP,
        given="busy_port",
        message="port {port} on 127.0.0.1 is in use (DEVICE_CONFORMANCE_BASE_PORT={port} asks for {port}-",
        fix="fix: stop that process, or unset DEVICE_CONFORMANCE_BASE_PORT to let the suite pick free ports",
        exit_code=2,
    ),
    Row(
        "`DEVICE_CONFORMANCE_BASE_PORT` not a port number",
        UP,
        env={"DEVICE_CONFORMANCE_BASE_PORT": "21000a"},
        message="DEVICE_CONFORMANCE_BASE_PORT='21000a' is not a port number for a block of 10 ports",
        fix="fix: set it to a number from 1024 to 65525",
        exit_code=2,
    ),
    Row(
        "not root (local provider)",
        UP,
        given="not_root",
        message="the local provider runs etcd, containerd and a kubelet, which needs root",
        fix="fix: run as root (e.g. `sudo make e2e`), or use PROVIDER=kind / PROVIDER=existing",
        exit_code=2,
    ),
    Row(
        "a missing Debian package (etcd-server)",
        UP,
        given="path_without_etcd",
        message="missing Debian packages for the local provider: ",
        fix="apt-get install -y ",
        also=("etcd-server",),
        exit_code=2,
        needs="root",
    ),
    Row(
        "`--provider existing` without a kubeconfig",
        [PYTEST, *SUITE, "--provider", "existing"],
        message="provider existing (option --provider) needs the kubeconfig of the cluster under test; none is given",
        fix="fix: pass --kubeconfig PATH, or set DEVICE_CONFORMANCE_KUBECONFIG (or KUBECONFIG)",
        exit_code=4,
    ),
    Row(
        "`--provider existing` with a broken kubeconfig",
        [PYTEST, *SUITE, "--provider", "existing", "--kubeconfig", "{tmp}/kubeconfig"],
        given="broken_kubeconfig",
        message="kubeconfig {tmp}/kubeconfig is not usable: ",
        fix="fix: point --kubeconfig (or KUBECONFIG) at the kubeconfig of the cluster under test",
        exit_code=3,
    ),
    Row(
        "an empty `--kubeconfig`",
        [PYTEST, *SUITE, "--kubeconfig", ""],
        message="--kubeconfig '' is empty",
        fix="fix: give the path of the cluster's kubeconfig",
        exit_code=4,
    ),
    Row(
        "an unknown `--provider`",
        [PYTEST, *SUITE, "--provider", "docker"],
        message="--provider 'docker' is not a provider",
        fix="fix: choose one of: local, kind, existing (or auto)",
        exit_code=4,
    ),
    Row(
        "a marker expression that does not parse",
        [PYTEST, *SUITE, "-m", "smoke and ("],
        message="Wrong expression passed to '-m': smoke and (: at column 12: expected not OR left parenthesis "
        "OR identifier; got end of input",
        fix="Wrong expression passed to '-m'",  # pytest's own message; the column is the fix
        exit_code=4,
    ),
    Row(
        "a `-k` expression that does not parse",
        [PYTEST, *SUITE, "-k", "cluster and ("],
        message="Wrong expression passed to '-k': cluster and (: at column 14: expected not OR left parenthesis "
        "OR identifier; got end of input",
        fix="Wrong expression passed to '-k'",  # pytest's own message; the column is the fix
        exit_code=4,
    ),
    Row(
        "a marker expression naming an unknown marker",
        [PYTEST, *SUITE, "-m", "smoke or deviceplugins"],
        message="-m 'smoke or deviceplugins' names markers that are not registered: deviceplugins",
        fix="fix: use registered markers (`pytest --markers` lists them)",
        exit_code=4,
    ),
    Row(
        "an invalid fake device plugin config",
        [PYTHON, "-m", "device_conformance.fakes.device_plugin", "--config", "{tmp}/plugin.json"],
        given="bad_plugin_config",
        message="fake device plugin config {tmp}/plugin.json: unknown keys ['resource']; "
        "missing keys ['resource_name']",
        fix="fix: write it with DevicePluginConfig(...).save(PATH)",
        exit_code=2,
        left="nothing (no socket in its socket dir)",
    ),
    Row(
        "an invalid fake DRA driver config",
        [PYTHON, "-m", "device_conformance.fakes.dra_driver", "--config", "{tmp}/driver.json"],
        given="bad_driver_config",
        message="fake DRA driver config: driver_name is empty",
        fix="fix: set driver_name",
        exit_code=2,
        left="nothing (no socket, no call log)",
    ),
    Row(
        "`certify --out` a folder holding files a certify run did not write",
        [CLI, "certify", "device-plugin", "--socket-dir", "{tmp}/dp", "--out", "{tmp}/out"],
        given="out_with_other_files",
        message="--out {tmp}/out holds 1 entry a certify run does not write: notes.txt",
        fix="fix: give --out a new or empty folder (a certify run replaces only its own report files",
        exit_code=2,
        left="the folder as it was",
        gone=("{tmp}/dp",),
    ),
    Row(
        "`certify dra-driver --claims auto` without a cluster",
        [
            CLI,
            "certify",
            "dra-driver",
            "--driver",
            "x.example.com",
            "--claims",
            "auto",
            "--registry-dir",
            "{tmp}/reg",
            "--out",
            "{tmp}/out",
        ],
        message="--claims auto needs --kubeconfig and --node",
        fix="fix: give --kubeconfig FILE of the cluster the driver publishes to, and --node NODE it runs for",
        exit_code=2,
        left="nothing (no report folder, no claim)",
        gone=("{tmp}/out",),
    ),
    Row(
        "`certify dra-driver --claims FILE` with a claim that is not allocated",
        [
            CLI,
            "certify",
            "dra-driver",
            "--driver",
            "x.example.com",
            "--node",
            "node-1",
            "--claims",
            "{tmp}/claims.yaml",
            "--registry-dir",
            "{tmp}/reg",
            "--out",
            "{tmp}/out",
        ],
        given="unallocated_claim",
        message="--claims {tmp}/claims.yaml: claim ns-1/gpu is not allocated",
        fix="fix: give a list of {namespace, name, uid[, devices]} entries, or ResourceClaim objects",
        exit_code=2,
        left="nothing (no report folder)",
        gone=("{tmp}/out", "{tmp}/reg"),
    ),
    Row(
        "a checkpoint file that is not JSON",
        [CLI, "checkpoint", "show", "{tmp}/kubelet_internal_checkpoint"],
        given="checkpoint_not_json",
        message="{tmp}/kubelet_internal_checkpoint is not a kubelet checkpoint: invalid JSON: ",
        fix="fix: restore a good copy or delete the file",
        exit_code=2,
        left="the file as it was",
    ),
]

GIVEN: dict[str, Callable[[Given], None]] = {row.given: globals()[row.given] for row in ROWS if row.given}


def markdown() -> str:
    lines = [
        "# Bad input",
        "",
        "Wrong inputs and what the suite answers: one error naming the fix, exit code 2 for `device-conformance`",
        "and the fakes, 4 (usage error) or 3 (session not prepared) for `pytest`, before anything is built or",
        "started. Each row is run for real by `tests/repo/test_bad_input_table.py` (part of `make test`), which",
        "also checks what is left: no run directory under the state root, no cache entry or staging directory,",
        "no process of the command, no mount. `$TMP` is a fresh directory; *Given* says what was arranged first.",
        "Every row runs with `DEVICE_CONFORMANCE_STATE=$TMP/state`, `DEVICE_CONFORMANCE_CACHE=$TMP/cache` and,",
        "except those that need the Go module proxy, `https_proxy` at a closed port (no download can start).",
        "",
        "Generated from `tests/repo/bad_input_rows.py` by `make docs`.",
        "",
        "| Input | Tried as | Exit | Message (key line) | Fix (start) | Left behind |",
        "|---|---|---|---|---|---|",
    ]
    for row in ROWS:
        given = globals()[row.given].__doc__.strip().replace("\n", " ") if row.given else ""
        given = " ".join(given.split())
        tried = f"`{row.command()}`" + (f"<br>*Given:* {given}" if given else "")
        if row.needs:
            tried += f"<br>*Needs:* {'root' if row.needs == 'root' else 'the Go module proxy'}"
        cells = [row.input, tried, str(row.exit_code), _code(row.message), _code(row.fix), row.left]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    return "`" + text.replace("{tmp}", "$TMP").replace("{port}", "$PORT").replace("`", "'") + "`"


if __name__ == "__main__":
    sys.stdout.write(markdown())
