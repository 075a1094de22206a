"""Provider names -> classes, built from the resolved settings (settings.py picks `auto`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from device_conformance.errors import BadInput
from device_conformance.providers.base import Provider
from device_conformance.settings import PROVIDERS, Settings


def make_provider(settings: Settings, *, log: Callable[[str], None], artifacts: Path | None = None) -> Provider:
    name = settings.provider.value
    version = settings.k8s_version.value
    if name == "local":
        from device_conformance.providers.local.provider import LocalProvider

        return LocalProvider(
            version,
            bin_dir=settings.k8s_bin_dir.value,
            source_tree=settings.k8s_source.value,
            containerd_version=settings.containerd_version.value,
            kubelet_version=settings.kubelet_version.value,
            knobs=settings.component_knobs(),
            log=log,
        )
    if name == "existing":
        from device_conformance.providers.existing import ExistingProvider

        return ExistingProvider(
            settings.kubeconfig.value,
            log=log,
            allow_node_disruption=settings.allow_node_disruption.value,
            agent_image=settings.node_agent_image.value,
        )
    if name == "kind":
        from device_conformance.providers.kind.provider import KindProvider

        return KindProvider(
            version,
            cluster_name=settings.kind_cluster.value,
            image=settings.kind_image.value,
            profile=settings.kind_profile.value,
            knobs=settings.component_knobs(),
            artifacts=artifacts,
            log=log,
        )
    raise BadInput(f"unknown provider {name!r} ({settings.provider.source})", f"choose one of: {', '.join(PROVIDERS)}")
