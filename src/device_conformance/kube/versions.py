"""The versions a running cluster reports: each node's kubelet and runtime, and the API server's."""

from __future__ import annotations

from dataclasses import dataclass

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.kube.client import Kube

WHERE = "read from the cluster: nodes' status.nodeInfo.kubeletVersion, the API server's /version"


@dataclass(frozen=True)
class ClusterVersions:
    kubelets: dict[str, KubeVersion]  # node name -> kubelet version
    runtimes: dict[str, str]  # node name -> containerRuntimeVersion (e.g. containerd://2.3.4)
    control_plane: KubeVersion

    @property
    def kubelet(self) -> KubeVersion:
        """The one kubelet version under test; a verdict would be wrong for nodes of another version."""
        versions = set(self.kubelets.values())
        if not versions:
            raise BadInput("the cluster has no nodes", "point the suite at a cluster with at least one node")
        if len(versions) > 1:
            seen = ", ".join(f"{node}: {version.tag}" for node, version in sorted(self.kubelets.items()))
            raise BadInput(
                f"the cluster's nodes run different kubelet versions ({seen})",
                "point the suite at a cluster whose nodes all run one kubelet version "
                "(version-dependent expectations need one version under test)",
            )
        return versions.pop()


def read_versions(kube: Kube, timeout: float = 30) -> ClusterVersions:
    nodes = kube.core.list_node(_request_timeout=timeout).items
    code = kube.version.get_code(_request_timeout=timeout)
    return ClusterVersions(
        kubelets={n.metadata.name: KubeVersion.from_reported(n.status.node_info.kubelet_version) for n in nodes},
        runtimes={n.metadata.name: n.status.node_info.container_runtime_version for n in nodes},
        control_plane=KubeVersion.from_reported(code.git_version),
    )
