"""The only place that builds Kubernetes API clients."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kubernetes import client, config


@dataclass(frozen=True)
class Kube:
    """Typed API groups of one cluster, built from one kubeconfig."""

    api_client: client.ApiClient

    @classmethod
    def from_kubeconfig(cls, kubeconfig: Path) -> Kube:
        return cls(config.new_client_from_config(config_file=str(kubeconfig)))

    @property
    def core(self) -> client.CoreV1Api:
        return client.CoreV1Api(self.api_client)

    @property
    def apps(self) -> client.AppsV1Api:
        """Deployments: workloads whose controller replaces an evicted pod."""
        return client.AppsV1Api(self.api_client)

    @property
    def custom(self) -> client.CustomObjectsApi:
        """resource.k8s.io objects go through here, so any API version of them works."""
        return client.CustomObjectsApi(self.api_client)

    @property
    def version(self) -> client.VersionApi:
        """The API server's /version."""
        return client.VersionApi(self.api_client)

    def close(self) -> None:
        self.api_client.close()
