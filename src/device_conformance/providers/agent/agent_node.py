"""A node of an existing cluster reached through the suite's node agent: the node API (node/base.py) over
AgentTransport, the kubelet as systemd's kubelet.service (node/systemd.py) driven through the agent.

Every command runs in the node's namespaces (nsenter into pid 1's, agent.go); the kubelet's podresources
socket and the runtime's CRI socket are forwarded to local sockets (client.SocketForwarder), so the gRPC
clients the other providers use work unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

import yaml

from device_conformance.core.errors import BadInput, CommandError
from device_conformance.node.base import NodeControl
from device_conformance.node.cri import CRIClient
from device_conformance.node.systemd import HEALTHZ, SystemdKubelet
from device_conformance.providers.agent.client import AgentClient, AgentError, SocketForwarder


class NotOnTestHost(BadInput):
    """A node path a test wants on the test host (a directory our fakes serve in, a file read directly) that a
    node reached through the agent does not have there: the test is not applicable on such a node (the
    pytest plugin reports it skipped, fixtures/cluster.py)."""


KUBELET_CONFIG = "/var/lib/kubelet/config.yaml"
# containerd's default (kind's node image, kubeadm's default for containerd hosts); the kubelet's
# containerRuntimeEndpoint in its config wins where it names another.
DEFAULT_CRI_SOCKET = "/run/containerd/containerd.sock"
# One /healthz request (node/systemd.py's curl uses --max-time 2).
HEALTHZ_TIMEOUT = 2


class AgentTransport:
    """NodeTransport of a node reached through its agent. Nothing is bound from the test host (mounts is
    empty): files go through `run`, Unix sockets through `forward`."""

    def __init__(self, client: AgentClient, agent_namespace: str) -> None:
        self.client = client
        self.name = client.node
        self.agent_namespace = agent_namespace
        self.mounts: dict[PurePosixPath, Path] = {}
        self.forwarder = SocketForwarder(client)
        self.kubelet_service = AgentKubelet(self)
        self._cri_socket: str | None = None

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, check: bool = True, timeout: float = 120
    ) -> bytes:
        return self.client.run(argv, stdin=stdin, check=check, timeout=timeout)

    def run_in_agent(self, argv: Sequence[str], *, check: bool = True, timeout: float = 30) -> bytes:
        """argv in the agent's own container (its busybox), in the node's network and pid namespaces."""
        return self.client.run(argv, check=check, timeout=timeout, in_node=False)

    def forward(self, node_socket: str) -> Path:
        """A local Unix socket reaching the node's `node_socket`."""
        return self.forwarder.local(node_socket)

    def cri_socket(self) -> str:
        """The runtime's socket: the kubelet config's containerRuntimeEndpoint (unix://...), else containerd's."""
        if self._cri_socket is None:
            endpoint = ""
            try:
                config = yaml.safe_load(self.run(["cat", KUBELET_CONFIG], timeout=30)) or {}
                endpoint = str(config.get("containerRuntimeEndpoint") or "")
            except (CommandError, yaml.YAMLError):
                pass
            unix = endpoint.startswith("unix://")
            self._cri_socket = endpoint.removeprefix("unix://") if unix else DEFAULT_CRI_SOCKET
        return self._cri_socket

    def cri(self) -> CRIClient:
        return CRIClient(str(self.forward(self.cri_socket())))

    def close(self) -> None:
        self.forwarder.close()


class AgentKubelet(SystemdKubelet):
    """kubelet.service through the agent. Health with the agent's own busybox wget (hostNetwork: the node's
    127.0.0.1), so the node needs no curl; log marks from the node's clock (the test host's may differ)."""

    def __init__(self, transport: AgentTransport) -> None:
        super().__init__(transport.name, transport.run)
        self.transport = transport

    def healthy(self) -> bool:
        # No `wget -T`: busybox implements it with alarm(), and its SIGALRM killed wget even when healthz had
        # answered (seen on the kind node). The agent's own timeout bounds the request instead.
        try:
            probe = self.transport.run_in_agent(
                ["wget", "-q", "-O", "-", HEALTHZ], check=False, timeout=HEALTHZ_TIMEOUT
            )
        except AgentError:  # timed out: a frozen kubelet accepts the connection and never answers
            return False
        return probe.strip() == b"ok"

    def log_mark(self) -> int:
        return int(self.transport.run_in_agent(["date", "+%s"]).strip())


class AgentNode(NodeControl):
    """The node API on a node of an existing cluster, through the agent the user allowed on it."""

    transport: AgentTransport

    def __init__(self, transport: AgentTransport) -> None:
        super().__init__(transport)
        self._sockets: dict[str, Path] = {}

    def host_path(self, node_path: str | Path) -> Path:
        """A Unix socket of the node (podresources' kubelet.sock) as a local socket forwarded through the agent;
        nothing else of the node is on the test host."""
        path = str(node_path)
        if path not in self._sockets:
            kind = self.transport.run(["sh", "-c", 'test -S "$1" && echo socket', "sh", path], check=False)
            if kind.strip() != b"socket":
                raise NotOnTestHost(
                    f"{path} is not a Unix socket on node {self.name}, and nothing else of a node reached through "
                    "the node agent is on the test host",
                    "use read_file()/write_file()/list_sockets() for the node's files",
                )
            self._sockets[path] = self.transport.forward(path)
        return self._sockets[path]

    def simulate_reboot(self) -> int:
        """Upstream's reboot simulation (stop the kubelet, remove every pod sandbox, start it), sparing the agent's
        own pod: removing it would cut the suite off the node. Returns the number of sandboxes removed."""
        with self.kubelet.stopped(), self.transport.cri() as cri:
            doomed = [s.id for s in cri.sandboxes() if s.namespace != self.transport.agent_namespace]
            for sandbox_id in doomed:
                cri.remove_sandbox(sandbox_id)
            return len(doomed)

    def describe(self) -> str:
        return f"node {self.name} through the {self.transport.client}"
