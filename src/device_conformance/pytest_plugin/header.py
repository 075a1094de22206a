"""The report header: what this run tests and where each part comes from.

Provider, versions (kubelet, control plane, containerd) with the source of each setting, where the
binaries come from (K8S_BIN_DIR, K8S_SOURCE, the cache, or a build at session start) and the cache paths. With
--provider existing the versions are read from the cluster itself, and the header says so.
"""

from __future__ import annotations

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.fixtures.session import session_settings
from device_conformance.pytest_plugin.workers import CHOICE_KEY
from device_conformance.settings import Settings
from device_conformance.toolchain.binaries import KUBELET_ONLY, binary_source
from device_conformance.toolchain.cache import CACHE_ENV, cache_root, has_manifest
from device_conformance.toolchain.containerd import BINARIES, containerd_dir

EXISTING_READ_TIMEOUT = 5  # seconds; the header must not hold a run up for long


def pytest_report_header(config: pytest.Config) -> list[str]:
    if hasattr(config, "workerinput"):
        return []
    try:
        settings = session_settings(config)
    except BadInput:
        # Not the message itself: a run that needs a cluster stops with it as its one error (docs/bad-input.md).
        return ["device-conformance: settings not usable (a test that needs a cluster stops with the reason)"]
    choice = config.stash.get(CHOICE_KEY, None)  # set when xdist asked for `-n auto`
    return header_lines(settings) + ([choice.header_line()] if choice else [])


def header_lines(settings: Settings) -> list[str]:
    can = settings.capabilities
    lines = [f"device-conformance: provider {settings.provider}"]
    lines += {"the cluster": _existing_lines, "node image": _kind_lines, "host binaries": _local_lines}[
        can.kubernetes_from
    ](settings)
    if can.brings_up_clusters:
        lines.append(f"  components: {settings.knobs_header()}")
        upgrade = settings.upgrade_from.value
        lines.append(
            f"  upgrade tests start from kubelet {upgrade.tag} ({settings.upgrade_from.source}): "
            + binary_source(upgrade, components=KUBELET_ONLY)
        )
    lines.append(f"  cache: {cache_root()} (env {CACHE_ENV})")
    return lines


def _local_lines(settings: Settings) -> list[str]:
    version = settings.k8s_version.value
    containerd = settings.containerd_version.value
    binaries = binary_source(version, user_dir=settings.k8s_bin_dir.value, source_tree=settings.k8s_source.value)
    kubelet = settings.kubelet_version.value
    if kubelet == version:
        lines = [
            f"  kubelet and control plane {version.tag} ({settings.k8s_version.source}), "
            f"containerd {containerd} ({settings.containerd_version.source})",
            f"  Kubernetes binaries: {binaries}",
        ]
    else:
        lines = [
            f"  control plane {version.tag} ({settings.k8s_version.source}), kubelet {kubelet.tag} "
            f"({settings.kubelet_version.source}), containerd {containerd} ({settings.containerd_version.source})",
            f"  Kubernetes binaries: {binaries}",
            f"  kubelet binary: {binary_source(kubelet, components=KUBELET_ONLY)}",
        ]
    return [*lines, f"  containerd binaries: {_containerd_source(containerd)}"]


def _containerd_source(version: str) -> str:
    directory = containerd_dir(version)
    if has_manifest(directory, BINARIES):
        return f"cache {directory}"
    return f"not cached: built (go install) at session start into {directory}"


def _kind_lines(settings: Settings) -> list[str]:
    cluster = settings.kind_cluster.value
    where = f"reused kind cluster {cluster}" if cluster else f"node image {settings.kind_image}"
    return [
        f"  kubelet and control plane {settings.k8s_version.value.tag} ({settings.k8s_version.source}) "
        f"from the {where}; containerd: the node image's",
    ]


def _existing_lines(settings: Settings) -> list[str]:
    from device_conformance.kube.client import Kube
    from device_conformance.kube.versions import WHERE, read_versions

    assert settings.kubeconfig.value is not None  # resolve() refuses existing without one
    lines = [f"  kubeconfig {settings.kubeconfig}"]
    try:
        kube = Kube.from_kubeconfig(settings.kubeconfig.value)
        try:
            versions = read_versions(kube, timeout=EXISTING_READ_TIMEOUT)
        finally:
            kube.close()
        kubelets = ", ".join(f"{node} {version.tag}" for node, version in sorted(versions.kubelets.items()))
        runtimes = ", ".join(sorted(set(versions.runtimes.values()))) or "-"
        lines += [
            f"  versions {WHERE} (--k8s-version is not used):",
            f"    kubelet {kubelets}; control plane {versions.control_plane.tag}; runtime {runtimes}",
        ]
    except Exception as exc:  # the header reports; the cluster fixture fails the run with the reason
        lines.append(f"  versions: read from the cluster at bring-up (not readable now: {type(exc).__name__}: {exc})")
    return lines
