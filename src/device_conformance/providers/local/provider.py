"""The local provider: binaries + images prepared, leftovers cleaned, one cluster per session."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from device_conformance.expectations.versions import KubeVersion
from device_conformance.kube.client import Kube
from device_conformance.providers.base import ClusterHandle
from device_conformance.providers.local import host, ports
from device_conformance.providers.local.cluster import LocalCluster
from device_conformance.providers.local.leftovers import clean_leftovers, journal
from device_conformance.providers.local.node import LocalNode
from device_conformance.settings import DEFAULT_KNOBS, ComponentKnobs, Settings
from device_conformance.toolchain.binaries import KUBELET_ONLY, KubernetesBinaries, ensure_binaries
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.containerd import DEFAULT_VERSION as DEFAULT_CONTAINERD
from device_conformance.toolchain.containerd import ContainerdBinaries, ensure_containerd
from device_conformance.toolchain.images.build import Image, build_images
from device_conformance.wait.kube import for_node_ready


class LocalProvider:
    name = "local"

    def __init__(
        self,
        version: KubeVersion,
        bin_dir: Path | None = None,
        log: Callable[[str], None] = print,
        containerd_version: str = DEFAULT_CONTAINERD,
        source_tree: Path | None = None,
        kubelet_version: KubeVersion | None = None,
        knobs: ComponentKnobs = DEFAULT_KNOBS,
    ) -> None:
        self.version = version
        self.knobs = knobs  # the components' knobs (settings.ComponentKnobs)
        # The node's kubelet release when it is not the control plane's (settings.py, KUBELET_VERSION).
        self.kubelet_version = kubelet_version or version
        self.bin_dir = bin_dir
        self.source_tree = source_tree
        self.containerd_version = containerd_version
        self.log = log
        self.cluster: LocalCluster | None = None
        self._prepared: tuple[KubernetesBinaries, ContainerdBinaries, list[Image]] | None = None
        self._skewed_kubelet: KubernetesBinaries | None = None

    def prepare(self) -> None:
        """Everything that needs no cluster: host checks, binaries (Kubernetes, containerd), images (idempotent)."""
        self.preflight()
        self._prepared = (
            ensure_binaries(self.version, user_dir=self.bin_dir, source_tree=self.source_tree, progress=self.log),
            ensure_containerd(self.containerd_version, progress=self.log),
            build_images(cache_root() / "images"),
        )
        if self.kubelet_version != self.version:
            # Only the kubelet of the skewed release: several times faster to build than all four.
            self._skewed_kubelet = ensure_binaries(self.kubelet_version, components=KUBELET_ONLY, progress=self.log)

    def preflight(self) -> None:
        """What the user must fix before anything is built or started: a busy pinned port block, then the host."""
        ports.pinned_block()
        host.preflight()

    def up(self) -> ClusterHandle:
        self.preflight()
        clean_leftovers(self.log)
        if self._prepared is None:
            self.prepare()
        assert self._prepared is not None
        binaries, containerd, images = self._prepared
        kubelet = self._skewed_kubelet
        node_kubelet = (kubelet.path("kubelet"), kubelet.version) if kubelet is not None else None
        self.cluster = LocalCluster.create(
            binaries, containerd, images, self.log, node_kubelet=node_kubelet, knobs=self.knobs
        )
        kube = Kube.from_kubeconfig(self.cluster.layout.kubeconfig)
        try:
            for_node_ready(kube, self.cluster.state.node_name)
        finally:
            kube.close()
        return ClusterHandle(
            name=self.cluster.state.run_id,
            provider=self.name,
            kubeconfig=self.cluster.layout.kubeconfig,
            k8s_version=self.kubelet_version,
            control_plane_version=self.version,
            nodes=[LocalNode(self.cluster)],
            collect_logs=self._collect_logs,
            version_source=f"the binaries it runs: {binaries.directory} ({binaries.source})",
            audit_log=self.cluster.layout.audit_log,
            controller_manager_metrics=self.cluster.controller_manager_metrics,
        )

    def _collect_logs(self, target: Path) -> None:
        if self.cluster is not None:
            shutil.copytree(self.cluster.layout.logs, target, dirs_exist_ok=True)

    def down(self) -> None:
        if self.cluster is not None:
            problems = self.cluster.down(self.log)
            for problem in problems:
                self.log(f"teardown left something behind: {problem}")
            self.cluster = None

    def journal(self, message: str) -> None:
        """A line in the host's clean-up journal (cleanups.log under the state root), e.g. a failed bring-up."""
        journal(message)

    def keep(self) -> str:
        assert self.cluster is not None
        self.cluster.keep()
        run_id = self.cluster.state.run_id
        return (
            f"kept cluster {run_id}: export KUBECONFIG={self.cluster.layout.kubeconfig}\n"
            f"  delete it with: device-conformance cluster down --provider local {run_id}"
        )


def from_settings(settings: Settings, *, log: Callable[[str], None], artifacts: Path | None = None) -> LocalProvider:
    """The local provider of a session or `cluster up` (settings.PROVIDER_CAPABILITIES["local"].make)."""
    return LocalProvider(
        settings.k8s_version.value,
        bin_dir=settings.k8s_bin_dir.value,
        source_tree=settings.k8s_source.value,
        containerd_version=settings.containerd_version.value,
        kubelet_version=settings.kubelet_version.value,
        knobs=settings.component_knobs(),
        log=log,
    )
