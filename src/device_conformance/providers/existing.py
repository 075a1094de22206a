"""An existing cluster reached through a kubeconfig. No node access: node-fault tests skip."""

from __future__ import annotations

from pathlib import Path

from device_conformance.errors import BadInput
from device_conformance.providers.base import ClusterHandle


class ExistingProvider:
    name = "existing"

    def __init__(self, kubeconfig: Path | None, version: str) -> None:
        if kubeconfig is None or not kubeconfig.exists():
            raise BadInput(
                f"--provider existing needs a kubeconfig, got {kubeconfig}",
                "pass --kubeconfig PATH (or set KUBECONFIG) pointing at the cluster under test",
            )
        self.kubeconfig = kubeconfig
        self.version = version

    def up(self) -> ClusterHandle:
        return ClusterHandle(name="existing", provider=self.name, kubeconfig=self.kubeconfig, k8s_version=self.version)

    def down(self) -> None:
        """We did not create it, so we never delete it."""

    def keep(self) -> str:
        return f"existing cluster left as it was ({self.kubeconfig})"
