"""A kind node: a container reached with `docker exec`, systemd runs its kubelet.

Paths bind-mounted from the host (the per-node device-plugins, plugins_registry, plugins, pod-resources
and /var/run/cdi directories) are read and written on the host directly, exactly as the fakes see them;
every other node path goes through `docker exec`.
"""

from __future__ import annotations

import re
import shlex
import socket
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import yaml

from device_conformance.core.errors import ConformanceError
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.dockercli import Docker
from device_conformance.node.base import WRITE_ATOMICALLY, NodeControl
from device_conformance.node.cri import CRIClient, Crictl
from device_conformance.node.kubelet import START_TIMEOUT
from device_conformance.node.systemd import SystemdKubelet

KUBELET_BINARY = "/usr/bin/kubelet"
# kind's containerd (images/base/files/etc/containerd/config.toml: the default address).
NODE_CRI_SOCKET = "/run/containerd/containerd.sock"
KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
# Where the node's own kubelet binary and config are kept while another version runs (upgrade tests).
ORIGINAL_SUFFIX = ".dc-original"
# A kubelet.service drop-in naming another CRI endpoint (NodeControl.set_runtime_endpoint). It replaces ExecStart
# with the unit's own command line plus --container-runtime-endpoint, which wins over the config file's
# containerRuntimeEndpoint (a flag overrides the --config file: kubelet docs, "Set Kubelet Parameters Via A
# Configuration File"). An Environment="KUBELET_EXTRA_ARGS=..." line cannot do it: kind's 10-kubeadm.conf
# (kind images/base/files/etc/systemd/system/kubelet.service.d) reads EnvironmentFile=-/etc/default/kubelet, which
# kind's node sets KUBELET_EXTRA_ARGS in (--runtime-cgroups=...), and a variable from an EnvironmentFile= overrides
# one from Environment= (systemd.exec(5), EnvironmentFile=). /run: a node container started again has none left;
# a run killed with the drop-in in place leaves it to the next bring-up (stale_runtime_endpoint).
RUNTIME_ENDPOINT_DROPIN = "/run/systemd/system/kubelet.service.d/50-dc-runtime-endpoint.conf"
ENDPOINT_FLAG = "--container-runtime-endpoint"
# The drop-in's first line: the endpoint it names, read back by stale_runtime_endpoint.
DROPIN_MARK = "# device-conformance CRI proxy endpoint: "
# `systemctl show -p ExecStart --value`: "{ path=/usr/bin/kubelet ; argv[]=/usr/bin/kubelet $A $B ; ... }".
_EXEC_ARGV = re.compile(r"argv\[\]=(.*?) ; ")
PUT_BACK_ORIGINALS = (
    f"for p in {KUBELET_BINARY} {KUBELET_CONFIG}; "
    f'do [ ! -e "$p{ORIGINAL_SUFFIX}" ] || mv -f "$p{ORIGINAL_SUFFIX}" "$p"; done'
)


class KindTransport:
    """NodeTransport of a kind node container."""

    def __init__(self, docker: Docker, container: str, mounts: Mapping[str, Path]) -> None:
        self.docker = docker
        self.name = container
        self.mounts = {PurePosixPath(node): Path(host) for node, host in mounts.items()}
        self.kubelet_service = KindKubelet(self)

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, check: bool = True, timeout: float = 120
    ) -> bytes:
        args = ["exec", *(["-i"] if stdin is not None else []), self.name, *argv]
        return self.docker.run(args, stdin=stdin, check=check, timeout=timeout).stdout

    def cri(self) -> Crictl | CRIClient:
        """crictl in the node when it has one; else the node's containerd CRI over gRPC, reached from the
        host through the node's root (/proc/<pid>/root: a Unix socket path resolves in that mount namespace),
        for node images without crictl (ours: cri-tools is not on the Go module proxy, kind-notes)."""
        has_crictl = self.run(["sh", "-c", "command -v crictl"], check=False, timeout=60).strip()
        if has_crictl:
            return Crictl(self.run)
        return CRIClient(self.runtime_socket())

    def runtime_socket(self) -> str:
        """The node's containerd socket from the host, through the node's root (NodeControl.runtime_socket)."""
        pid = self.docker.text(["inspect", "--format", "{{.State.Pid}}", self.name], timeout=60).strip()
        if not pid.isdigit() or pid == "0":
            raise ConformanceError(f"kind node {self.name} is not running (pid {pid!r}): no CRI to reach")
        return f"/proc/{pid}/root{NODE_CRI_SOCKET}"

    def set_runtime_endpoint(self, endpoint: str | None) -> None:
        """NodeControl.set_runtime_endpoint: a runtime drop-in of kubelet.service whose ExecStart is the unit's
        own plus --container-runtime-endpoint, or none (the drop-in and its directory, when empty, removed);
        systemd reads it at the next start (after daemon-reload)."""
        dropin_dir = str(PurePosixPath(RUNTIME_ENDPOINT_DROPIN).parent)
        if endpoint is None:
            self.run(["rm", "-f", RUNTIME_ENDPOINT_DROPIN])
            self.run(["rmdir", "--ignore-fail-on-non-empty", dropin_dir], check=False)
        else:
            self.run(["rm", "-f", RUNTIME_ENDPOINT_DROPIN])  # a left-over one: the unit's own command line below
            self.run(["systemctl", "daemon-reload"])
            shown = self.run(["systemctl", "show", "kubelet", "--property", "ExecStart", "--value"]).decode()
            dropin = runtime_dropin(unit_argv(shown), endpoint)
            self.run(["mkdir", "-p", dropin_dir])
            self.run(["sh", "-c", 'cat > "$1"', "sh", RUNTIME_ENDPOINT_DROPIN], stdin=dropin.encode())
        self.run(["systemctl", "daemon-reload"])

    def runtime_dropin_endpoint(self) -> str | None:
        """The endpoint our runtime drop-in names; None when there is none."""
        text = self.run(["sh", "-c", 'cat "$1" 2>/dev/null || true', "sh", RUNTIME_ENDPOINT_DROPIN]).decode()
        if not text.strip():
            return None
        first = text.splitlines()[0]
        return first.removeprefix(DROPIN_MARK).strip() if first.startswith(DROPIN_MARK) else ""

    def stale_runtime_endpoint(self) -> str | None:
        """The endpoint of a runtime drop-in nothing serves any more (a run killed with SIGKILL while its CRI
        proxy test ran: the proxy exits with it, the drop-in stays in the node's /run and the kubelet keeps asking
        a dead socket); None when there is no drop-in or its proxy serves. The proxy runs on the test host, so
        an endpoint not bound from the host, or a drop-in without our mark, is stale too."""
        endpoint = self.runtime_dropin_endpoint()
        if endpoint is None:
            return None
        node_path = PurePosixPath(endpoint.removeprefix("unix://")) if endpoint else None
        host = _host_path(self.mounts, node_path) if node_path is not None else None
        if host is not None and _serves(host):
            return None
        return endpoint or "(unreadable)"


def unit_argv(shown: str) -> str:
    """The command line of kubelet.service's ExecStart, from `systemctl show --property ExecStart --value`, without
    a --container-runtime-endpoint of ours; ConformanceError when it names no single command."""
    found = _EXEC_ARGV.findall(shown)
    if len(found) != 1:
        raise ConformanceError(
            f"kubelet.service has {len(found)} ExecStart commands ({shown.strip()!r}); a CRI endpoint drop-in "
            "needs exactly one"
        )
    words = [w for w in found[0].split(" ") if w and not w.startswith(f"{ENDPOINT_FLAG}=")]
    return " ".join(words)


def runtime_dropin(argv: str, endpoint: str) -> str:
    """The drop-in: the unit's ExecStart replaced by itself plus the endpoint flag (% escaped: systemd
    specifiers were expanded in what `systemctl show` printed)."""
    command = f"{argv} {ENDPOINT_FLAG}={endpoint}".replace("%", "%%")
    return f"{DROPIN_MARK}{endpoint}\n[Service]\nExecStart=\nExecStart={command}\n"


def _host_path(mounts: Mapping[PurePosixPath, Path], node_path: PurePosixPath) -> Path | None:
    for node_dir, host_dir in sorted(mounts.items(), key=lambda item: -len(item[0].parts)):
        if node_path == node_dir or node_dir in node_path.parents:
            return host_dir / node_path.relative_to(node_dir)
    return None


def _serves(path: Path) -> bool:
    """Something accepts connections on the Unix socket `path`."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


class KindKubelet(SystemdKubelet):
    """kind's kubelet.service; another kubelet is swapped in with `docker cp` (and the node's put back)."""

    def __init__(self, transport: KindTransport) -> None:
        super().__init__(transport.name, transport.run)
        self.transport = transport

    def put_in_place(self, binary: Path | None, version: KubeVersion | None) -> None:
        if binary is None:
            self.run(["sh", "-c", PUT_BACK_ORIGINALS])
            return
        saved = KUBELET_BINARY + ORIGINAL_SUFFIX
        self.run(["sh", "-c", f"[ -e {saved} ] || cp -p {KUBELET_BINARY} {saved}"])
        self.transport.docker.run(["cp", str(binary), f"{self.node}:{KUBELET_BINARY}"])
        self.run(["chmod", "0755", KUBELET_BINARY])
        if version is not None:
            self._retarget_config(version)

    def _retarget_config(self, version: KubeVersion) -> None:
        """Feature gates of the kubelet's config for `version` (gates unknown to a kubelet are fatal)."""
        saved = KUBELET_CONFIG + ORIGINAL_SUFFIX
        self.run(["sh", "-c", f"[ -e {saved} ] || cp -p {KUBELET_CONFIG} {saved}"])
        config = yaml.safe_load(self.run(["cat", saved])) or {}
        settings = settings_for(version)
        config["featureGates"] = dict(settings.feature_gates)
        config.update(settings.kubelet_config)
        if not config["featureGates"]:
            del config["featureGates"]
        # /var/lib/kubelet itself is not bound from the host on kind: written inside the node.
        self.run(["sh", "-c", WRITE_ATOMICALLY, "sh", KUBELET_CONFIG, "644"], stdin=yaml.safe_dump(config).encode())


class KindNode(NodeControl):
    """The node API (NodeControl) plus what only a kind node can do: a real reboot, docker exec."""

    transport: KindTransport

    def __init__(self, docker: Docker, container: str, mounts: Mapping[str, Path], k8s_version: str) -> None:
        """`mounts`: node directory -> host directory bound onto it (kind extraMounts); `k8s_version`: the
        node image's Kubernetes version."""
        super().__init__(KindTransport(docker, container, mounts))
        self.docker = docker
        self.kubelet_version = k8s_version

    def exec(self, argv: Sequence[str], *, stdin: bytes | None = None, check: bool = True, timeout: float = 120) -> str:
        return self.transport.run(argv, stdin=stdin, check=check, timeout=timeout).decode(errors="replace")

    def reboot(self, timeout: float = START_TIMEOUT) -> None:
        """A real reboot of the node container (`docker restart`, within `timeout`): every process of the node
        starts afresh; then the kubelet healthy, for as long as it makes progress."""
        self.docker.run(["restart", "--time", "30", self.name], timeout=timeout)
        self.kubelet.wait_healthy()

    def describe(self) -> str:
        return f"kind node {self.name} (docker exec; mounts: {shlex.join(map(str, self.transport.mounts))})"
