"""A private Docker engine for hosts where none runs (no systemd here): the kind provider's and the tests'.

Everything it owns lives under one short temporary directory: data-root, exec-root (with its own
containerd), pidfile, socket, daemon.json, the runc wrapper. It does not touch the host's firewall
(--iptables=false, --ip-masq=false) nor make docker0 (--bridge=none); user-defined bridge networks
still work, and kind's nodes need one: with `kind_network=True` it creates the IPv4 bridge network
"kind" (kind v0.33.0 pkg/cluster/internal/providers/docker/network.go uses an existing network of
that name as it is). Published ports (kind's API server on 127.0.0.1) go through docker-proxy, which
needs no iptables. It uses a cgroup parent of its own, and stop() removes containers, volumes,
networks, the daemon and its containerd, mounts, cgroups, the directory, and the host files dockerd
20.10 writes outside its roots whatever the flags (/etc/docker/key.json, /run/docker) if it made them.

Privileged containers: where the host's capability bounding set lacks a capability that privileged
mode asks for, runc fails ("unable to apply caps"); then the engine runs every container through
capwrap.py (registered in daemon.json as the default runtime), which drops those capabilities.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from device_conformance.core import timeouts
from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.host.dockercli import Docker
from device_conformance.host.process import pid_alive, terminate
from device_conformance.providers.kind import capwrap
from device_conformance.wait.core import Abort, holding
from device_conformance.wait.progress import Budget, of_process, until_progressing

CGROUP_ROOT = Path("/sys/fs/cgroup")
# Written by dockerd 20.10 outside its roots whatever the flags: removed on stop if it created them.
HOST_FILES = (Path("/etc/docker/key.json"), Path("/run/docker"))
# dockerd answers for as long as it makes progress (CPU, its log): wait/progress.py.
START_BUDGET = Budget(timeouts.COMPONENT_START_STALL, timeouts.COMPONENT_START_CEILING)
WRAPPER_RUNTIME = "dc-capwrap"
KIND_NETWORK = "kind"
# Marks what we create, so nothing else is ever removed by name alone.
OWNER_LABEL = "io.device-conformance.private-dockerd"
# Names an engine's root; a run that died without stop() leaves one behind (cleanup_stale()).
ROOT_PREFIX = "dcd-"
OWNER_FILE = "owner.pid"
CREATED_FILE = "host-files-created"


def host_missing_capabilities(
    status: Path = Path("/proc/self/status"), last_cap: Path = Path("/proc/sys/kernel/cap_last_cap")
) -> list[str]:
    """The capabilities privileged mode asks for (0..cap_last_cap) that this host's bounding set lacks."""
    mask = capwrap.bounding_mask(status.read_text())
    return capwrap.missing_from_bounding(mask, int(last_cap.read_text()))


def render_wrapper(real_runc: str, python: str = sys.executable) -> str:
    """capwrap.py as a standalone runtime executable that execs `real_runc`."""
    source = Path(capwrap.__file__).read_text()
    placeholder = 'REAL_RUNC = "runc"\n'
    if source.count(placeholder) != 1:
        raise ConformanceError(f"{capwrap.__file__} must assign REAL_RUNC exactly once as {placeholder.strip()!r}")
    # -I: ignore the environment and the user site; -S: no site-packages (stdlib only, fast start). One
    # word: Linux passes everything after the interpreter in a shebang as a single argument.
    return f"#!{python} -IS\n" + source.replace(placeholder, f"REAL_RUNC = {real_runc!r}\n")


def daemon_config(wrapper: Path | None) -> dict[str, object]:
    """daemon.json: the wrapper as the default runtime, or nothing (flags carry the rest: no conflicts)."""
    if wrapper is None:
        return {}
    return {"runtimes": {WRAPPER_RUNTIME: {"path": str(wrapper)}}, "default-runtime": WRAPPER_RUNTIME}


def dockerd_argv(dockerd: str, root: Path, cgroup_parent: str) -> list[str]:
    return [
        dockerd,
        f"--data-root={root / 'data'}",
        f"--exec-root={root / 'exec'}",
        f"--pidfile={root / 'docker.pid'}",
        f"--host=unix://{root / 'docker.sock'}",
        "--iptables=false",
        "--ip-masq=false",
        "--bridge=none",
        "--storage-driver=overlay2",
        "--exec-opt=native.cgroupdriver=cgroupfs",
        f"--cgroup-parent={cgroup_parent}",
        f"--config-file={root / 'daemon.json'}",
    ]


class PrivateDockerd:
    def __init__(
        self,
        root: Path,
        process: subprocess.Popen[bytes] | None,
        cgroup_parent: str,
        created: list[Path],
        *,
        pid: int | None = None,
    ) -> None:
        self.root = root
        self.created = created
        self.process = process
        self.pid = process.pid if process is not None else pid
        self.cgroup_parent = cgroup_parent
        self.host = f"unix://{root / 'docker.sock'}"
        self.docker = Docker(host=self.host)
        self.wrapped: list[str] = []  # capabilities the wrapper drops (empty: no wrapper)

    @classmethod
    def start(
        cls, *, kind_network: bool = False, wrap: bool | None = None, log: Callable[[str], None] = lambda _: None
    ) -> PrivateDockerd:
        """`wrap`: None runs containers through capwrap where the host needs it; False never (tests)."""
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            raise BadInput("dockerd is not installed", "device-conformance setup --provider kind (installs docker.io)")
        if os.geteuid() != 0:
            raise BadInput("starting a Docker engine needs root", "run as root, or start Docker yourself")
        runc = shutil.which("runc")
        missing = host_missing_capabilities() if wrap is not False else []
        if missing and runc is None:
            raise BadInput("runc is not installed", "device-conformance setup --provider kind (installs docker.io)")
        # Short: containerd's socket lives under the exec-root and sun_path holds 107 bytes.
        root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX, dir="/tmp"))
        (root / OWNER_FILE).write_text(f"{os.getpid()}\n")
        cgroup_parent = f"/{root.name}"
        wrapper = None
        if missing:
            wrapper = root / "capwrap"
            wrapper.write_text(render_wrapper(str(runc)))
            wrapper.chmod(0o755)
        (root / "daemon.json").write_text(json.dumps(daemon_config(wrapper), indent=2) + "\n")
        created = [path for path in HOST_FILES if not path.exists()]
        (root / CREATED_FILE).write_text("".join(f"{path}\n" for path in created))
        log_file = (root / "dockerd.log").open("wb")
        argv = dockerd_argv(dockerd, root, cgroup_parent)
        # Own session: a Ctrl-C of the run must not reach dockerd before we removed its containers.
        process = subprocess.Popen(argv, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
        log_file.close()
        engine = cls(root, process, cgroup_parent, created)
        engine.wrapped = missing
        try:
            engine._wait_ready()
            if kind_network:
                engine.create_kind_network()
        except BaseException:
            engine.stop()
            raise
        log(engine.describe())
        return engine

    def describe(self) -> str:
        text = f"started a private dockerd: DOCKER_HOST={self.host} (log {self.root / 'dockerd.log'})"
        if self.wrapped:
            text += (
                f"; this host's capability bounding set lacks {', '.join(self.wrapped)}, so privileged "
                f"containers run through the runc wrapper {self.root / 'capwrap'}, which drops them"
            )
        return text

    def create_kind_network(self) -> None:
        """The IPv4 bridge network kind puts its nodes on (kind would try IPv6 first, and its own name)."""
        self.docker.run(
            [
                "network", "create", "--driver", "bridge", "--label", f"{OWNER_LABEL}=1",
                "-o", "com.docker.network.bridge.enable_ip_masquerade=false", KIND_NETWORK,
            ],
            timeout=120,
        )  # fmt: skip

    def _wait_ready(self) -> None:
        def answers() -> str | None:
            if self.process is not None and self.process.poll() is not None:
                raise Abort(f"dockerd exited with {self.process.returncode}:\n{self.log_tail()}")
            return self.docker.answers()

        try:
            until_progressing(
                holding(answers),
                what="the private dockerd to answer",
                progress=of_process(
                    lambda: self.process.pid if self.process else self.pid, [self.root / "dockerd.log"]
                ),
                budget=START_BUDGET,
                interval=0.1,
            )
        except Abort as exc:
            raise ConformanceError(str(exc)) from None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join((self.root / "dockerd.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def _alive(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None
        return self.pid is not None and pid_alive(self.pid)

    def stop(self) -> None:
        if self._alive():
            ids = self.docker.text(["ps", "-aq"], check=False, timeout=60).split()
            if ids:
                self.docker.run(["rm", "-f", "-v", *ids], check=False, timeout=300)
            # User networks (kind's) are Linux bridges on the host: remove them with the engine.
            self.docker.run(["network", "prune", "-f"], check=False, timeout=120)
            self.docker.run(["volume", "prune", "-f"], check=False, timeout=120)
            assert self.pid is not None
            terminate(self.pid, grace=30, sig=signal.SIGTERM)
            if self.process is not None:
                self.process.wait(timeout=10)
        # dockerd's own containerd is its child; make sure nothing of ours outlives it.
        containerd_pidfile = self.root / "exec" / "containerd" / "containerd.pid"
        if containerd_pidfile.exists():
            try:
                pid = int(containerd_pidfile.read_text().strip())
                if pid_alive(pid):
                    terminate(pid, grace=10)
            except ValueError:
                pass
        self._kill_shims()
        self._unmount_leftovers()
        self._remove_cgroups()
        self._remove_bridges()
        shutil.rmtree(self.root, ignore_errors=True)
        for path in self.created:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def _kill_shims(self) -> None:
        """containerd-shims (and their containers) of this engine left by a dockerd that died first."""
        marker = str(self.root / "exec").encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"containerd-shim" in cmdline and marker in cmdline:
                terminate(int(entry.name), grace=5, sig=signal.SIGKILL)

    def _unmount_leftovers(self) -> None:
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for target in sorted((m for m in mounts if m.startswith(str(self.root))), key=len, reverse=True):
            subprocess.run(["umount", "-l", target], check=False, capture_output=True)

    def _remove_cgroups(self) -> None:
        for hierarchy in CGROUP_ROOT.iterdir() if CGROUP_ROOT.is_dir() else []:
            directory = hierarchy / self.cgroup_parent.lstrip("/")
            if directory.is_dir():
                for child in sorted(directory.rglob("*"), key=lambda p: len(p.parts), reverse=True):
                    if child.is_dir():
                        child.rmdir()
                directory.rmdir()

    def _remove_bridges(self) -> None:
        """Bridges of networks a dead dockerd could not remove (their ids are in its data-root)."""
        networks = self.root / "data" / "network" / "files" / "local-kv.db"
        if not networks.exists():
            return
        data = networks.read_bytes()
        for link in Path("/sys/class/net").iterdir():
            # dockerd names user bridges br-<first 12 hex of the network id>.
            if link.name.startswith("br-") and link.name[3:].encode() in data:
                subprocess.run(["ip", "link", "delete", link.name], check=False, capture_output=True)

    @classmethod
    def cleanup_stale(cls, log: Callable[[str], None] = print) -> list[Path]:
        """Stop engines whose owning process died without stop() (SIGKILL): what `cluster cleanup` calls."""
        cleaned = []
        for root in Path("/tmp").glob(f"{ROOT_PREFIX}*"):
            try:
                owner = int((root / OWNER_FILE).read_text())
            except (OSError, ValueError):
                continue
            if pid_alive(owner):
                continue
            try:
                pid = int((root / "docker.pid").read_text())
            except (OSError, ValueError):
                pid = None
            try:
                created = [Path(line) for line in (root / CREATED_FILE).read_text().splitlines() if line]
            except OSError:
                created = []
            engine = cls(root, None, f"/{root.name}", created, pid=pid)
            engine.stop()
            log(f"stopped the private dockerd left by process {owner} ({root})")
            cleaned.append(root)
        return cleaned

    def __enter__(self) -> PrivateDockerd:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
