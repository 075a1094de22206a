"""A kind node: a container reached with `docker exec`, systemd runs its kubelet.

Paths bind-mounted from the host (the per-node device-plugins, plugins_registry, plugins, pod-resources
and /var/run/cdi directories) are read and written on the host directly, exactly as the fakes see them;
every other node path goes through `docker exec`.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath

import yaml

from device_conformance.dockercli import Docker
from device_conformance.errors import ConformanceError
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import KubeVersion
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
# A kubelet.service drop-in naming another CRI endpoint (NodeControl.set_runtime_endpoint): kind's 10-kubeadm.conf
# passes $KUBELET_EXTRA_ARGS last (kind images/base/files/etc/systemd/system/kubelet.service.d), and the flag wins
# over the config file's containerRuntimeEndpoint. /run: a node container started again has none left.
RUNTIME_ENDPOINT_DROPIN = "/run/systemd/system/kubelet.service.d/50-dc-runtime-endpoint.conf"
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
        """NodeControl.set_runtime_endpoint: a runtime drop-in of kubelet.service adding
        --container-runtime-endpoint, or none; systemd reads it at the next start (after daemon-reload)."""
        if endpoint is None:
            self.run(["rm", "-f", RUNTIME_ENDPOINT_DROPIN])
        else:
            dropin = f'[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--container-runtime-endpoint={endpoint}"\n'
            self.run(["mkdir", "-p", str(PurePosixPath(RUNTIME_ENDPOINT_DROPIN).parent)])
            self.run(["sh", "-c", 'cat > "$1"', "sh", RUNTIME_ENDPOINT_DROPIN], stdin=dropin.encode())
        self.run(["systemctl", "daemon-reload"])


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
