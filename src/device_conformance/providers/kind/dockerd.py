"""A private Docker engine for tests on hosts where none runs (no systemd here).

Everything it owns lives under one short temporary directory: data-root, exec-root (with its own
containerd), pidfile, socket. It does not touch the host's firewall or bridges (--iptables=false,
--bridge=none; containers run with --network none), uses a cgroup parent of its own, and stop()
removes containers, daemon, cgroups and directory. Never used for the suites' clusters.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

from device_conformance.dockercli import Docker
from device_conformance.errors import BadInput, ConformanceError
from device_conformance.process import pid_alive, terminate
from device_conformance.wait.core import Abort, Pending, until

CGROUP_ROOT = Path("/sys/fs/cgroup")
# Written by dockerd 20.10 outside its roots whatever the flags: removed on stop if it created them.
HOST_FILES = (Path("/etc/docker/key.json"), Path("/run/docker"))
START_TIMEOUT = 60


class PrivateDockerd:
    def __init__(self, root: Path, process: subprocess.Popen[bytes], cgroup_parent: str, created: list[Path]) -> None:
        self.root = root
        self.created = created
        self.process = process
        self.cgroup_parent = cgroup_parent
        self.docker = Docker(host=f"unix://{root / 'docker.sock'}")

    @classmethod
    def start(cls) -> PrivateDockerd:
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            raise BadInput("dockerd is not installed", "device-conformance setup --provider kind (installs docker.io)")
        if os.geteuid() != 0:
            raise BadInput("starting a Docker engine needs root", "run as root, or start Docker yourself")
        # Short: containerd's socket lives under the exec-root and sun_path holds 107 bytes.
        root = Path(tempfile.mkdtemp(prefix="dcd-", dir="/tmp"))
        cgroup_parent = f"/{root.name}"
        argv = [
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
        (root / "daemon.json").write_text("{}\n")
        created = [path for path in HOST_FILES if not path.exists()]
        log = (root / "dockerd.log").open("wb")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        engine = cls(root, process, cgroup_parent, created)
        try:
            engine._wait_ready()
        except BaseException:
            engine.stop()
            raise
        return engine

    def _wait_ready(self) -> None:
        def probe() -> bool | Pending:
            if self.process.poll() is not None:
                raise Abort(f"dockerd exited with {self.process.returncode}:\n{self.log_tail()}")
            problem = self.docker.answers()
            return True if problem is None else Pending(problem)

        try:
            until(probe, what="the private dockerd to answer", timeout=START_TIMEOUT, interval=0.1)
        except Abort as exc:
            raise ConformanceError(str(exc)) from None

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join((self.root / "dockerd.log").read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        if self.process.poll() is None:
            ids = self.docker.text(["ps", "-aq"], check=False, timeout=60).split()
            if ids:
                self.docker.run(["rm", "-f", "-v", *ids], check=False, timeout=120)
            # User networks (kind's) are Linux bridges on the host: remove them with the engine.
            self.docker.run(["network", "prune", "-f"], check=False, timeout=120)
            terminate(self.process.pid, grace=30, sig=signal.SIGTERM)
            self.process.wait(timeout=10)
        # dockerd's own containerd is its child; make sure nothing of ours outlives it.
        shim_pidfile = self.root / "exec" / "containerd" / "containerd.pid"
        if shim_pidfile.exists():
            try:
                pid = int(shim_pidfile.read_text().strip())
                if pid_alive(pid):
                    terminate(pid, grace=10)
            except ValueError:
                pass
        self._unmount_leftovers()
        self._remove_cgroups()
        shutil.rmtree(self.root, ignore_errors=True)
        for path in self.created:
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

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

    def __enter__(self) -> PrivateDockerd:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
