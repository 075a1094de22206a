"""Provider names -> classes; `auto` picks the best provider available on this machine."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from device_conformance.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.base import Provider

PROVIDERS = ("local", "kind", "existing")


def default_provider(kubeconfig: Path | None) -> str:
    if kubeconfig is not None:
        return "existing"
    return "local"


def make_provider(
    name: str,
    version: KubeVersion,
    *,
    kubeconfig: Path | None,
    bin_dir: Path | None,
    log: Callable[[str], None],
    kind: Mapping[str, str | None] | None = None,
    artifacts: Path | None = None,
) -> Provider:
    """`kind`: cluster (reuse by name), image, profile for --provider kind."""
    if name in ("", "auto"):
        name = default_provider(kubeconfig)
    if name == "local":
        from device_conformance.providers.local.provider import LocalProvider

        return LocalProvider(version, bin_dir=bin_dir, log=log)
    if name == "existing":
        from device_conformance.providers.existing import ExistingProvider

        return ExistingProvider(kubeconfig or Path(os.environ.get("KUBECONFIG", "")), str(version))
    if name == "kind":
        from device_conformance.providers.kind.provider import KindProvider

        options = kind or {}
        return KindProvider(
            version,
            cluster_name=options.get("cluster"),
            image=options.get("image"),
            profile=options.get("profile"),
            artifacts=artifacts,
            log=log,
        )
    raise BadInput(f"unknown provider {name!r}", f"choose one of: {', '.join(PROVIDERS)} (or auto)")
