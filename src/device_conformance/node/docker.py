"""Node control for a node that is a container (kind): `docker exec` into it, systemd runs the kubelet.

Same API as LocalNode. Paths bind-mounted from the host (the per-node device-plugins, plugins_registry,
plugins, pod-resources and /var/run/cdi directories) are read and written on the host directly, exactly
as the fakes see them; every other node path goes through `docker exec`.
"""

from __future__ import annotations

import json
import shlex
import signal
import time
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import yaml

from device_conformance.dockercli import Docker
from device_conformance.errors import BadInput, CommandError, ConformanceError
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.cri import Sandbox
from device_conformance.toolchain.binaries import KUBELET_ONLY, ensure_binaries
from device_conformance.wait.core import Pending, until

KUBELET_BINARY = "/usr/bin/kubelet"
# Where the node's own kubelet binary and config are kept while another version runs (upgrade tests).
ORIGINAL_SUFFIX = ".dc-original"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
HEALTHZ = "http://127.0.0.1:10248/healthz"
STOP_TIMEOUT = 60
START_TIMEOUT = 120


class DockerNode:
    def __init__(self, docker: Docker, container: str, mounts: Mapping[str, Path], k8s_version: str) -> None:
        """`mounts`: node directory -> host directory bound onto it (kind extraMounts)."""
        self.docker = docker
        self.name = container
        self.mounts = {PurePosixPath(node): Path(host) for node, host in mounts.items()}
        self.kubelet_version = k8s_version

    # -- plumbing ----------------------------------------------------------------------------
    def exec(self, argv: Sequence[str], *, stdin: bytes | None = None, check: bool = True, timeout: float = 120) -> str:
        args = ["exec", *(["-i"] if stdin is not None else []), self.name, *argv]
        return self.docker.run(args, stdin=stdin, check=check, timeout=timeout).stdout.decode(errors="replace")

    def _mapped(self, node_path: str | Path) -> Path | None:
        path = PurePosixPath(node_path)
        for node_dir, host_dir in sorted(self.mounts.items(), key=lambda item: -len(item[0].parts)):
            if path == node_dir or node_dir in path.parents:
                return host_dir / path.relative_to(node_dir)
        return None

    def host_path(self, node_path: str | Path) -> Path:
        mapped = self._mapped(node_path)
        if mapped is None:
            raise BadInput(
                f"{node_path} is not bind-mounted from the host on kind node {self.name}",
                f"use a path under one of {', '.join(map(str, self.mounts))}, or read_file()/write_file()",
            )
        return mapped

    # -- kubelet lifecycle -----------------------------------------------------------------
    def kubelet_pid(self) -> int:
        """The kubelet's pid in the node's pid namespace (0 when it is not running)."""
        return int(self.exec(["systemctl", "show", "--property=MainPID", "--value", "kubelet"]).strip() or 0)

    def kubelet_healthy(self) -> bool:
        probe = self.exec(["curl", "-sf", "--max-time", "2", HEALTHZ], check=False, timeout=30)
        return probe.strip() == "ok"

    def wait_kubelet_healthy(self, timeout: float = START_TIMEOUT) -> None:
        until(
            lambda: True if self.kubelet_healthy() else Pending(f"healthz on {self.name} does not answer ok"),
            what=f"the kubelet on {self.name} to be healthy",
            timeout=timeout,
            interval=0.1,
        )

    def signal_kubelet(self, sig: signal.Signals) -> None:
        pid = self.kubelet_pid()
        if pid == 0:
            raise ConformanceError(f"signal_kubelet({sig.name}): no kubelet runs on {self.name}")
        self.exec(["kill", "-s", sig.name.removeprefix("SIG"), str(pid)])

    def stop_kubelet(self) -> None:
        if self.kubelet_pid():
            self.signal_kubelet(signal.SIGCONT)  # a frozen kubelet cannot act on SIGTERM
        self.exec(["systemctl", "stop", "kubelet"], timeout=STOP_TIMEOUT + 30)
        until(
            lambda: True if not self.kubelet_healthy() else Pending("healthz still answers"),
            what=f"the kubelet's healthz on {self.name} to stop answering",
            timeout=STOP_TIMEOUT,
        )

    def start_kubelet(self, binary: Path | None = None, version: KubeVersion | None = None) -> None:
        """Start the kubelet; with `binary`/`version`, that kubelet replaces the node's (docker cp).

        Without either, the node's own kubelet (and config) is put back if another one was swapped in."""
        if self.kubelet_pid():
            raise ConformanceError("start_kubelet: the kubelet is already running; stop it first")
        if version is not None and binary is None:
            binary = ensure_binaries(version, components=KUBELET_ONLY).path("kubelet")
        if binary is not None:
            self._swap_kubelet(binary, version)
        else:
            self._restore_kubelet()
        self.exec(["systemctl", "start", "kubelet"])
        self.wait_kubelet_healthy()

    def restart_kubelet(self) -> None:
        self.stop_kubelet()
        self.exec(["systemctl", "start", "kubelet"])  # the binary in place stays (as LocalNode does)
        self.wait_kubelet_healthy()

    def crash_kubelet(self) -> None:
        killed = self.kubelet_pid()
        if killed == 0:
            raise ConformanceError(f"crash_kubelet: no kubelet runs on {self.name}")
        self.exec(["kill", "-s", "KILL", str(killed)])
        # systemd brings it back (kind's kubelet.service: Restart=always, RestartSec=1s).
        until(
            lambda: True if self.kubelet_pid() not in (0, killed) else Pending("no new kubelet pid yet"),
            what=f"systemd on {self.name} to restart the SIGKILLed kubelet (pid {killed})",
            timeout=30,
        )
        self.wait_kubelet_healthy()

    def _swap_kubelet(self, binary: Path, version: KubeVersion | None) -> None:
        saved = KUBELET_BINARY + ORIGINAL_SUFFIX
        self.exec(["sh", "-c", f"[ -e {saved} ] || cp -p {KUBELET_BINARY} {saved}"])
        self.docker.run(["cp", str(binary), f"{self.name}:{KUBELET_BINARY}"])
        self.exec(["chmod", "0755", KUBELET_BINARY])
        if version is not None:
            self._retarget_config(version)
        self.kubelet_version = str(version) if version else self.kubelet_version

    def _restore_kubelet(self) -> None:
        for path in (KUBELET_BINARY, KUBELET_CONFIG):
            saved = path + ORIGINAL_SUFFIX
            self.exec(["sh", "-c", f"if [ -e {saved} ]; then mv -f {saved} {path}; fi"])

    def _retarget_config(self, version: KubeVersion) -> None:
        """Feature gates of the kubelet's config for `version` (gates unknown to a kubelet are fatal)."""
        saved = KUBELET_CONFIG + ORIGINAL_SUFFIX
        self.exec(["sh", "-c", f"[ -e {saved} ] || cp -p {KUBELET_CONFIG} {saved}"])
        config = yaml.safe_load(self.read_file(saved)) or {}
        settings = settings_for(version)
        config["featureGates"] = dict(settings.feature_gates)
        config.update(settings.kubelet_config)
        if not config["featureGates"]:
            del config["featureGates"]
        self.write_file(KUBELET_CONFIG, yaml.safe_dump(config).encode(), mode=0o644)

    # -- files -------------------------------------------------------------------------------
    def read_file(self, node_path: str | Path) -> bytes:
        mapped = self._mapped(node_path)
        if mapped is not None:
            return mapped.read_bytes()
        try:
            return self.docker.run(["exec", self.name, "cat", str(node_path)]).stdout
        except CommandError as exc:
            raise FileNotFoundError(f"{self.name}:{node_path}: {exc.output.strip()}") from None

    def write_file(self, node_path: str | Path, data: bytes, mode: int = 0o600) -> None:
        mapped = self._mapped(node_path)
        if mapped is not None:
            partial = mapped.with_name(f".{mapped.name}.partial")
            partial.write_bytes(data)
            partial.chmod(mode)
            partial.replace(mapped)
            return
        # Atomic inside the node too: the kubelet must never read a half-written checkpoint.
        script = 'cat > "$1.dc-partial" && chmod "$2" "$1.dc-partial" && mv -f "$1.dc-partial" "$1"'
        self.exec(["sh", "-c", script, "sh", str(node_path), f"{mode:o}"], stdin=data)

    def delete_file(self, node_path: str | Path) -> None:
        mapped = self._mapped(node_path)
        if mapped is not None:
            mapped.unlink(missing_ok=True)
        else:
            self.exec(["rm", "-f", str(node_path)])

    def list_sockets(self, node_dir: str | Path) -> list[str]:
        mapped = self._mapped(node_dir)
        if mapped is not None:
            return sorted(e.name for e in mapped.iterdir() if e.is_socket()) if mapped.is_dir() else []
        found = self.exec(["find", str(node_dir), "-maxdepth", "1", "-type", "s"], check=False)
        return sorted(PurePosixPath(line).name for line in found.split())

    # -- logs --------------------------------------------------------------------------------
    def kubelet_log_mark(self) -> int:
        """Seconds since the epoch: node and host share the kernel clock, journald stamps with it."""
        return int(time.time())

    def kubelet_log_since(self, mark: int) -> str:
        return self.exec(
            ["journalctl", "--unit=kubelet.service", f"--since=@{mark}", "--output=cat", "--no-pager", "--quiet"],
            timeout=60,
        )

    # -- whole-node faults -------------------------------------------------------------------
    def pod_sandboxes(self) -> list[Sandbox]:
        reply = json.loads(self.exec(["crictl", "pods", "--output", "json"]) or "{}")
        return [
            Sandbox(
                id=item["id"],
                name=item["metadata"]["name"],
                namespace=item["metadata"]["namespace"],
                uid=item["metadata"]["uid"],
                ready=item.get("state") == "SANDBOX_READY",
            )
            for item in reply.get("items") or []
        ]

    def runtime_info(self) -> dict:
        """crictl info: the runtime's verbose CRI Status (containerd's config under "config")."""
        return json.loads(self.exec(["crictl", "info"]))

    def remove_all_sandboxes(self) -> int:
        ids = self.exec(["crictl", "pods", "--quiet"]).split()
        if ids:
            self.exec(["crictl", "stopp", *ids], timeout=180)
            self.exec(["crictl", "rmp", *ids], timeout=180)
        return len(ids)

    def containers_running(self) -> int:
        return len(self.exec(["crictl", "ps", "--quiet", "--state", "Running"]).split())

    def simulate_reboot(self) -> int:
        """Upstream's reboot: kubelet stopped, every sandbox removed through CRI (crictl), kubelet started."""
        self.stop_kubelet()
        removed = self.remove_all_sandboxes()
        self.exec(["systemctl", "start", "kubelet"])
        self.wait_kubelet_healthy()
        return removed

    def reboot(self, timeout: float = START_TIMEOUT) -> None:
        """A real reboot of the node container (`docker restart`): every process of the node starts afresh."""
        self.docker.run(["restart", "--time", "30", self.name], timeout=timeout)
        self.wait_kubelet_healthy(timeout)

    def describe(self) -> str:
        return f"kind node {self.name} (docker exec; mounts: {shlex.join(map(str, self.mounts))})"
