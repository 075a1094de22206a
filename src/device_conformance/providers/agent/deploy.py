"""Bring the node agents up on the nodes the user named (and no other), and remove them.

One namespace per session holds the Secret and the pods; deleting it removes everything the session made.
`AgentDeployment.down()` runs from the provider's down(), which the cluster fixture calls in a `finally`
(also after Ctrl-C and SIGTERM, fixtures/cluster.py) and pytest_unconfigure calls when that was skipped.
A session killed with SIGKILL leaves its namespace: `device-conformance node-agent cleanup --kubeconfig K`
deletes every agent namespace (label device-conformance.io/node-agent).
"""

from __future__ import annotations

import datetime
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from device_conformance.core import timeouts
from device_conformance.core.errors import BadInput, ConformanceError, WaitTimeout
from device_conformance.kube.client import Kube
from device_conformance.providers.agent import manifest
from device_conformance.providers.agent.agent_node import AgentNode, AgentTransport
from device_conformance.providers.agent.client import AgentClient
from device_conformance.wait.core import Abort, Pending, until
from device_conformance.wait.progress import Budget, nothing, until_progressing

# The agent's pod runs and its agent answers for as long as what we see of it changes (pod phase, container
# state, the connection error): wait/progress.py. The pod runs on another machine: no CPU to watch here.
AGENT_READY_BUDGET = Budget(timeouts.NODE_AGENT_STALL, timeouts.NODE_AGENT_CEILING)
NAMESPACE_GONE_TIMEOUT = 180
# The agent listens on the node's IP; a session picks a port in this range (a second session on the same
# node picks another; a taken port fails that pod with "address already in use" in its log).
PORT_RANGE = (20000, 29999)
# Waiting reasons of a container whose image the node cannot get.
IMAGE_PROBLEMS = ("ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName")

Log = Callable[[str], None]


def check_nodes(allowed: Sequence[str], existing: Sequence[str]) -> None:
    """Every node named must be a node of the cluster (a typo must not silently mean "no node")."""
    unknown = [name for name in allowed if name not in existing]
    if unknown:
        raise BadInput(
            f"--allow-node-disruption names {', '.join(unknown)}, not a node of this cluster "
            f"(its nodes: {', '.join(existing) or 'none'})",
            "name nodes exactly as `kubectl get nodes` lists them",
        )


def self_signed(common_name: str) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM): the agent's TLS identity for one session, pinned by the client."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return cert.public_bytes(serialization.Encoding.PEM), key_pem


@dataclass
class AgentDeployment:
    kube: Kube
    nodes: Sequence[str]
    image: str
    image_hint: str  # how a user gets the image onto the nodes (for an image pull failure)
    log: Log = print
    session: str = ""
    port: int = 0

    def __post_init__(self) -> None:
        self.session = self.session or secrets.token_hex(4)
        self.port = self.port or PORT_RANGE[0] + secrets.randbelow(PORT_RANGE[1] - PORT_RANGE[0] + 1)
        self.namespace = manifest.namespace_name(self.session)
        self.created = False
        self.transports: list[AgentTransport] = []

    def up(self) -> list[AgentNode]:
        """Create the namespace, secret and one pod per named node; return the nodes once each agent answers."""
        from kubernetes.client.exceptions import ApiException

        existing = [n.metadata.name for n in self.kube.core.list_node().items]
        check_nodes(self.nodes, existing)
        cert, key = self_signed(f"dc-node-agent-{self.session}")
        token = secrets.token_urlsafe(32)
        core = self.kube.core
        self.log(
            f"node agent: namespace {self.namespace}, pods on {', '.join(self.nodes)} only "
            f"(--allow-node-disruption), image {self.image}, TLS port {self.port}"
        )
        try:
            core.create_namespace(manifest.namespace(self.session))
        except ApiException as exc:
            raise ConformanceError(f"cannot create the node agent's namespace {self.namespace}: {_why(exc)}") from None
        self.created = True
        core.create_namespaced_secret(self.namespace, manifest.secret(self.session, cert, key, token))
        for node in self.nodes:
            core.create_namespaced_pod(self.namespace, manifest.pod(self.session, node, self.image, self.port))
        nodes = []
        for node in self.nodes:
            host = self._wait_running(node)
            transport = AgentTransport(AgentClient(node, host, self.port, token, cert), self.namespace)
            self.transports.append(transport)
            self._wait_answers(transport)
            nodes.append(AgentNode(transport))
        placed = {pod.metadata.name: pod.spec.node_name for pod in core.list_namespaced_pod(self.namespace).items}
        strays = {name: node for name, node in placed.items() if node not in self.nodes}
        if strays:  # nodeName makes this impossible; checked so that a run shows it
            raise ConformanceError(f"node agent pods on nodes not allowed by --allow-node-disruption: {strays}")
        self.log(f"node agent: {', '.join(f'{n}@{node}' for n, node in sorted(placed.items()))} answering")
        return nodes

    def _wait_running(self, node: str) -> str:
        """The pod's host IP once it runs; at once an error naming the fix when its image cannot be had."""
        name = manifest.pod_name(node)

        def probe() -> str | Pending:
            pod = self.kube.core.read_namespaced_pod(name, self.namespace)
            for status in pod.status.container_statuses or []:
                waiting = status.state.waiting
                if waiting is not None and waiting.reason in IMAGE_PROBLEMS:
                    raise Abort(
                        f"node {node} cannot get the node agent's image {self.image} ({waiting.reason}: "
                        f"{waiting.message}). Fix: {self.image_hint}"
                    )
                if status.state.terminated is not None:
                    raise Abort(
                        f"the node agent on {node} exited ({status.state.terminated.reason}): {self._pod_log(name)}"
                    )
            if pod.status.phase == "Running" and pod.status.host_ip:
                return pod.status.host_ip
            states = [f"{s.name}: {_state(s.state)}" for s in pod.status.container_statuses or []]
            conditions = [f"{c.type}={c.status}" for c in pod.status.conditions or []]
            return Pending(f"pod phase {pod.status.phase}, conditions {conditions}, containers {states}")

        try:
            return until_progressing(
                probe,
                what=f"the node agent on {node} to run",
                progress=nothing,
                budget=AGENT_READY_BUDGET,
                interval=0.2,
                max_interval=1.0,
            )
        except (Abort, WaitTimeout) as exc:
            raise ConformanceError(str(exc)) from None

    def _wait_answers(self, transport: AgentTransport) -> None:
        try:
            until_progressing(
                lambda: transport.run_in_agent(["true"]) == b"" or None,
                what=f"the {transport.client} to answer",
                progress=nothing,
                budget=AGENT_READY_BUDGET,
                interval=0.2,
                max_interval=1.0,
            )
        except WaitTimeout as exc:
            raise ConformanceError(
                f"{exc}\nThe test host must reach the node's IP at TCP port {self.port} (the agent does not go "
                f"through the API server); agent log: {self._pod_log(manifest.pod_name(transport.name))}"
            ) from None

    def _pod_log(self, name: str) -> str:
        try:
            return self.kube.core.read_namespaced_pod_log(name, self.namespace, tail_lines=20) or "(empty)"
        except Exception as exc:  # the log is for the message only
            return f"(no log: {type(exc).__name__})"

    def down(self) -> None:
        """Remove the session's namespace (secret, agent pods) and wait until it is gone."""
        for transport in self.transports:
            transport.close()
        self.transports = []
        if not self.created:
            return
        delete_namespace(self.kube, self.namespace, self.log)
        self.created = False


def delete_namespace(kube: Kube, namespace: str, log: Log = print) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        kube.core.delete_namespace(namespace, grace_period_seconds=0)
    except ApiException as exc:
        if exc.status != 404:
            raise
        return

    def gone() -> bool | Pending:
        try:
            kube.core.read_namespace(namespace)
        except ApiException as exc:
            if exc.status == 404:
                return True
            raise
        return Pending("still there")

    until(gone, what=f"namespace {namespace} to be deleted", timeout=NAMESPACE_GONE_TIMEOUT)
    log(f"node agent: namespace {namespace} deleted (agent pods and secret gone)")


def cleanup(kube: Kube, log: Log = print) -> list[str]:
    """Delete every node agent namespace on the cluster (sessions killed before their teardown)."""
    namespaces = kube.core.list_namespace(label_selector=f"{manifest.LABEL}=true").items
    for item in namespaces:
        delete_namespace(kube, item.metadata.name, log)
    return [item.metadata.name for item in namespaces]


def _why(exc: object) -> str:
    return f"{getattr(exc, 'status', '?')} {getattr(exc, 'reason', '')}: {getattr(exc, 'body', '')}"[:500]


def _state(state: object) -> str:
    """waiting (with its reason), running or terminated: what a container is doing, for progress and messages."""
    waiting = getattr(state, "waiting", None)
    if waiting is not None:
        return f"waiting {waiting.reason}"
    return next((k for k in ("running", "terminated") if getattr(state, k, None) is not None), "unknown")
