"""An existing cluster reached through a kubeconfig. No node access: node-fault tests skip.

The version under test is what the cluster runs, read from it (never a default): each node's
status.nodeInfo.kubeletVersion, and the API server's /version for the control plane.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from device_conformance.errors import BadInput, ConformanceError
from device_conformance.kube.client import Kube
from device_conformance.kube.versions import WHERE, read_versions
from device_conformance.providers.base import ClusterHandle


class ExistingProvider:
    name = "existing"

    def __init__(self, kubeconfig: Path | None, log: Callable[[str], None] = print) -> None:
        if kubeconfig is None or not kubeconfig.exists():
            raise BadInput(
                f"--provider existing needs a kubeconfig, got {kubeconfig}",
                "pass --kubeconfig PATH (or set KUBECONFIG) pointing at the cluster under test",
            )
        self.kubeconfig = kubeconfig
        self.log = log

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
        )

    def down(self) -> None:
        """We did not create it, so we never delete it."""

    def keep(self) -> str:
        return f"existing cluster left as it was ({self.kubeconfig})"


def _first_line(exc: Exception) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else "(no message)"
