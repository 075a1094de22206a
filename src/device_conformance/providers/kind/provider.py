"""The kind provider: one kind cluster per session (per xdist worker), or an existing one reused by name.

We delete only clusters we created (state file `created: true`), never one we reused; --keep-cluster
leaves ours running. Orphans of crashed runs are deleted at the next start.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from device_conformance.core.errors import CommandError, ConformanceError
from device_conformance.expectations.kind import default_node_image
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.dockercli import Docker
from device_conformance.kube.client import Kube
from device_conformance.providers.base import ClusterHandle
from device_conformance.providers.kind import config, dockerd, parallel
from device_conformance.providers.kind.cli import CREATE_WAIT, KindCLI
from device_conformance.providers.kind.layout import NODE_MOUNTS, KindLayout, kind_root
from device_conformance.providers.kind.node import KindNode
from device_conformance.providers.kind.preflight import preflight
from device_conformance.providers.kind.state import KindState, all_layouts, remove_host_dirs
from device_conformance.settings import DEFAULT_KNOBS, ComponentKnobs, Settings
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.images.build import Image, build_images
from device_conformance.wait.kube import for_node_ready

Log = Callable[[str], None]


class KindProvider:
    name = "kind"

    def __init__(
        self,
        version: KubeVersion,
        *,
        cluster_name: str | None = None,
        image: str | None = None,
        profile: str | None = None,
        artifacts: Path | None = None,
        docker: Docker | None = None,
        log: Log = print,
        knobs: ComponentKnobs = DEFAULT_KNOBS,
    ) -> None:
        self.version = version
        self.knobs = knobs  # the components' knobs (settings.ComponentKnobs), rendered as kubeadm patches
        self.requested_name = cluster_name
        self.image = image or default_node_image(version)
        self.profile = profile or config.DEFAULT_PROFILE
        self.artifacts = artifacts or Path("artifacts")
        self.docker = docker or Docker()
        self.log = log
        self.cli: KindCLI | None = None
        self.cluster: str | None = None
        self.layout: KindLayout | None = None
        self.created = False
        self.kubeconfig_dir: Path | None = None
        self.images: list[Image] | None = None

    def prepare(self) -> None:
        """Our images (the node image is Docker's business: preflight reports it at bring-up)."""
        self.images = build_images(cache_root() / "images")

    # -- bring-up ----------------------------------------------------------------------------
    def up(self) -> ClusterHandle:
        name = parallel.check_name(self.requested_name or parallel.cluster_name())
        # One cluster per xdist worker: that many are created on this host at once.
        clusters = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
        kind = preflight(self.docker, self.version, self.image, need_image=False, clusters=clusters, log=self.log)
        self.cli = KindCLI(kind, self.docker)
        self.clean_orphans()
        if self.cli.exists(name):
            if self.requested_name is None:
                raise ConformanceError(f"a kind cluster named {name} exists already (a name collision; run again)")
            kubeconfig = self._reuse(name)
        else:
            # Now the node image must be there.
            preflight(self.docker, self.version, self.image, clusters=clusters, log=lambda _: None)
            kubeconfig = self._create(name)
        self.cluster = name
        if self.images is None:
            self.prepare()
        for image in self.images or []:
            self.cli.load_image_archive(name, image.tarball)
        nodes = self._nodes(name)
        if not self.created:
            self._reset_stale_runtime_endpoints(nodes)
        kube = Kube.from_kubeconfig(kubeconfig)
        try:
            for node in nodes:
                for_node_ready(kube, node.name)
        finally:
            kube.close()
        return ClusterHandle(
            name=name,
            provider=self.name,
            kubeconfig=kubeconfig,
            # What the nodes run (kind writes it to /kind/version), not what was asked for: a reused
            # cluster may run another version.
            k8s_version=KubeVersion.from_reported(nodes[0].kubelet_version) if nodes else self.version,
            version_source="the kind nodes' /kind/version" if nodes else "the node image asked for",
            shared_dir=self._shared_dir(name),
            nodes=list(nodes),
            collect_logs=self.collect_logs,
        )

    def _reuse(self, name: str) -> Path:
        assert self.cli is not None
        self.log(f"reusing the existing kind cluster {name} (not created by this run, so never deleted by it)")
        self.kubeconfig_dir = Path(tempfile.mkdtemp(prefix=f"dc-kind-{name}-"))
        kubeconfig = self.kubeconfig_dir / "kubeconfig"
        try:
            self.cli.export_kubeconfig(name, kubeconfig)
        except BaseException:
            shutil.rmtree(self.kubeconfig_dir, ignore_errors=True)
            self.kubeconfig_dir = None
            raise
        return kubeconfig

    def _create(self, name: str) -> Path:
        assert self.cli is not None
        layout = KindLayout.for_cluster(name)
        rendered = config.render(
            self.version,
            layout,
            self.image,
            self.profile,
            host_lacks=dockerd.host_missing_capabilities(),
            knobs=self.knobs,
        )
        for index in range(len(rendered["nodes"])):
            for host_dir in layout.node_mounts(index).values():
                host_dir.mkdir(parents=True, exist_ok=True)
        layout.shared_dir.mkdir(parents=True, exist_ok=True)
        config.write_registry_config(layout)
        config.write(rendered, layout.config_file)
        # Recorded before `kind create`: a crash mid-create still leaves enough to clean up.
        KindState(name, True, os.getpid(), str(self.version), self.image, self.profile).save(layout)
        self.layout, self.created = layout, True
        with parallel.creation_slot(kind_root() / ".locks", self.docker, self.log):
            started = time.monotonic()
            self.log(f"creating kind cluster {name} ({self.profile}, {self.image}); waiting <= {CREATE_WAIT}")
            try:
                self.cli.create(name, layout.config_file, layout.kubeconfig)
            except CommandError as exc:
                target = self.artifacts / f"kind-create-{name}"
                self.cli.export_logs(name, target)
                self.down()
                raise ConformanceError(f"{exc}\nkind's node logs: {target}") from None
        self.log(f"kind cluster {name} ready in {time.monotonic() - started:.0f}s")
        return layout.kubeconfig

    def _nodes(self, name: str) -> list[KindNode]:
        assert self.cli is not None
        nodes = []
        for container in self.cli.nodes(name):
            mounts = {path: host for path, host in self.cli.node_mounts(container).items() if path in NODE_MOUNTS}
            missing = sorted(set(NODE_MOUNTS) - set(mounts))
            if missing:
                self.log(
                    f"node {container} has no host directory bound on {', '.join(missing)}: tests that run fake "
                    "plugins there will fail; create the cluster with this suite (or its rendered config)"
                )
            version = self.docker.text(["exec", container, "cat", "/kind/version"], timeout=60).strip()
            nodes.append(KindNode(self.docker, container, mounts, version.removeprefix("v")))
        # Nodes that run workloads first: the `node` fixture takes nodes[0], and with workers the
        # control plane keeps its NoSchedule taint.
        return sorted(nodes, key=lambda n: (n.name.endswith("-control-plane") and len(nodes) > 1, n.name))

    def _reset_stale_runtime_endpoints(self, nodes: list[KindNode]) -> None:
        """A reused cluster's kubelets back on containerd where a killed run left one pointed at its CRI proxy
        (fixtures/cri_proxy.py; KindTransport.stale_runtime_endpoint), before the nodes are waited Ready."""
        for node in nodes:
            stale = node.transport.stale_runtime_endpoint()
            if stale is not None:
                node.transport.set_runtime_endpoint(None)
                node.kubelet.restart()
                self.log(
                    f"node {node.name}: removed the kubelet's CRI endpoint drop-in left by an earlier run ({stale}, "
                    "served by nothing) and restarted the kubelet on containerd"
                )

    def _shared_dir(self, name: str) -> Path | None:
        """The layout's shared directory when every node binds it at the same path (clusters we render)."""
        assert self.cli is not None
        shared = KindLayout.for_cluster(name).shared_dir
        for container in self.cli.nodes(name):
            if self.cli.node_mounts(container).get(str(shared)) != shared:
                return None
        return shared

    # -- reports -----------------------------------------------------------------------------
    def collect_logs(self, target: Path) -> None:
        if self.cli is not None and self.cluster is not None:
            self.cli.export_logs(self.cluster, target)

    # -- teardown ----------------------------------------------------------------------------
    def down(self) -> None:
        if self.kubeconfig_dir is not None:
            shutil.rmtree(self.kubeconfig_dir, ignore_errors=True)
            self.kubeconfig_dir = None
        if self.created and self.cli is not None and self.layout is not None:
            name = self.layout.cluster
            if self.cli.exists(name):
                self.cli.delete(name, self.layout.kubeconfig)
            remove_host_dirs(self.layout)
            self.log(f"deleted kind cluster {name}")
            self.created = False

    def keep(self) -> str:
        if not self.created or self.layout is None:
            return f"kind cluster {self.cluster} left as it was (reused, not ours)"
        state = KindState.load(self.layout)
        state.kept = True
        state.save(self.layout)
        name = self.layout.cluster
        return (
            f"kept kind cluster {name}: export KUBECONFIG={self.layout.kubeconfig}\n"
            f"  run against it again with: --provider kind --kind-cluster {name}\n"
            f"  delete it with: device-conformance cluster down --provider kind {name}"
        )

    def clean_orphans(self) -> list[str]:
        """Delete clusters (and host directories) that crashed runs of ours left behind."""
        return delete_orphans(self.cli, self.log)


def delete_orphans(cli: KindCLI | None, log: Log) -> list[str]:
    """Delete the clusters (and host directories) of our runs whose owner is gone; their names."""
    cleaned = []
    for layout in all_layouts():
        try:
            state = KindState.load(layout)
        except (OSError, ValueError, TypeError):
            continue
        if state.orphaned():
            delete_created_cluster(cli, layout, log)
            cleaned.append(layout.cluster)
    return cleaned


def sweep_orphans(log: Log) -> list[str]:
    """delete_orphans through the engine that answers now (the session's private dockerd is still up when the
    xdist controller sweeps: pytest_plugin/worker_leftovers.py)."""
    from device_conformance.providers.kind.tools import find_kind

    kind, docker = find_kind(), Docker()
    cli = KindCLI(kind, docker) if kind is not None and docker.answers() is None else None
    return delete_orphans(cli, log)


def delete_created_cluster(cli: KindCLI | None, layout: KindLayout, log: Log) -> None:
    """Delete a cluster this suite created (its state file says so) and its host directories."""
    if cli is not None and cli.exists(layout.cluster):
        cli.delete(layout.cluster, layout.kubeconfig)
    remove_host_dirs(layout)
    log(f"deleted kind cluster {layout.cluster} left by an earlier run")


def from_settings(settings: Settings, *, log: Callable[[str], None], artifacts: Path | None = None) -> KindProvider:
    """The kind provider of a session (settings.PROVIDER_CAPABILITIES["kind"].make)."""
    return KindProvider(
        settings.k8s_version.value,
        cluster_name=settings.kind_cluster.value,
        image=settings.kind_image.value,
        profile=settings.kind_profile.value,
        knobs=settings.component_knobs(),
        artifacts=artifacts,
        log=log,
    )
