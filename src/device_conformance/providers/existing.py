"""An existing cluster reached through a kubeconfig. Node access only where the user allows it:
--allow-node-disruption NODE[,NODE] deploys the suite's node agent on those nodes (providers/agent/) for the
session; without it (or on the other nodes) node-fault tests skip, naming the option.

The version under test is what the cluster runs, read from it (never a default): each node's
status.nodeInfo.kubeletVersion, and the API server's /version for the control plane.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.kube.client import Kube
from device_conformance.kube.versions import WHERE, read_versions
from device_conformance.providers.base import ClusterHandle
from device_conformance.settings import Settings

# What the node fixture says when a node-fault test skips on an existing cluster.
NO_NODE_ACCESS = (
    "provider existing gives node access only through the suite's node agent: pass --allow-node-disruption "
    "NODE[,NODE] (ALLOW_NODE_DISRUPTION) naming the nodes it may disturb"
)


class ExistingProvider:
    name = "existing"

    def __init__(
        self,
        kubeconfig: Path | None,
        log: Callable[[str], None] = print,
        *,
        allow_node_disruption: tuple[str, ...] | None = None,
        agent_image: str | None = None,
    ) -> None:
        if kubeconfig is None or not kubeconfig.exists():
            raise BadInput(
                f"--provider existing needs a kubeconfig, got {kubeconfig}",
                "pass --kubeconfig PATH (or set KUBECONFIG) pointing at the cluster under test",
            )
        self.kubeconfig = kubeconfig
        self.log = log
        self.allowed_nodes = tuple(allow_node_disruption or ())
        self.agent_image = agent_image
        self.agent_image_hint = "pass --node-agent-image IMAGE naming an image your nodes can pull"
        self.deployment: object | None = None  # AgentDeployment while the agents run

    def prepare(self) -> None:
        """Nothing to fetch or build: the cluster is there already. Its kubeconfig must read as one,
        so a broken file stops the session before the first test rather than failing every test."""
        try:
            Kube.from_kubeconfig(self.kubeconfig).close()
        except Exception as exc:  # the client's loader raises ConfigException, YAML and type errors alike
            raise BadInput(
                f"kubeconfig {self.kubeconfig} is not usable: {type(exc).__name__}: {_first_line(exc)}",
                "point --kubeconfig (or KUBECONFIG) at the kubeconfig of the cluster under test; "
                "`kubectl --kubeconfig FILE config view --minify` shows what a file holds",
            ) from None
        if self.allowed_nodes and self.agent_image is None:
            from device_conformance.providers.agent.image import agent_image
            from device_conformance.toolchain.cache import cache_root

            image = agent_image(cache_root() / "images" / "node-agent")
            self.agent_image = image.name
            self.agent_image_hint = load_hint(image.name, image.tarball)

    def up(self) -> ClusterHandle:
        try:
            kube = Kube.from_kubeconfig(self.kubeconfig)
            try:
                versions = read_versions(kube)
            finally:
                kube.close()
        except ConformanceError:
            raise
        except Exception as exc:  # the client's config, connection and API errors alike
            raise ConformanceError(
                f"cannot read the versions of the cluster behind {self.kubeconfig}: {type(exc).__name__}: {exc}"
            ) from exc
        return ClusterHandle(
            name="existing",
            provider=self.name,
            kubeconfig=self.kubeconfig,
            k8s_version=versions.kubelet,
            control_plane_version=versions.control_plane,
            version_source=WHERE,
            nodes=list(self._agents()),
        )

    def _agents(self) -> list:
        """The node agents on the nodes the user named (none without --allow-node-disruption)."""
        if not self.allowed_nodes:
            return []
        if self.agent_image is None:
            self.prepare()
        from device_conformance.providers.agent.deploy import AgentDeployment

        deployment = AgentDeployment(
            Kube.from_kubeconfig(self.kubeconfig),
            self.allowed_nodes,
            str(self.agent_image),
            self.agent_image_hint,
            log=self.log,
        )
        self.deployment = deployment
        return deployment.up()

    def down(self) -> None:
        """We did not create the cluster, so we never delete it; the node agents we deployed go."""
        deployment, self.deployment = self.deployment, None
        if deployment is not None:
            try:
                deployment.down()  # type: ignore[attr-defined]
            finally:
                deployment.kube.close()  # type: ignore[attr-defined]

    def keep(self) -> str:
        self.down()  # the agents never outlive the session, --keep-cluster or not
        return f"existing cluster left as it was ({self.kubeconfig})"


def load_hint(image: str, tarball: Path) -> str:
    """How a user puts the locally built agent image on the nodes (for an image pull failure)."""
    return (
        f"load {tarball} into the container runtime of each node named by --allow-node-disruption "
        f"(containerd: `ctr -n k8s.io images import {tarball}`; kind: `kind load image-archive {tarball} "
        f"--name CLUSTER`), or push it to a registry the nodes pull from as {image!r} or under another name "
        "given with --node-agent-image"
    )


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else "(no message)"


def from_settings(settings: Settings, *, log: Callable[[str], None], artifacts: Path | None = None) -> ExistingProvider:
    """The existing cluster of a session (settings.PROVIDER_CAPABILITIES["existing"].make)."""
    return ExistingProvider(
        settings.kubeconfig.value,
        log=log,
        allow_node_disruption=settings.allow_node_disruption.value,
        agent_image=settings.node_agent_image.value,
    )
