"""`device-conformance cluster config|list|down|cleanup|build-node-image --provider kind`: the kind clusters this
suite created on this host, the config it would create one with, and its node image. Each function is named in
settings.PROVIDER_CAPABILITIES["kind"].cluster_verbs and called by cli/cluster.py as (settings, args) -> exit
status."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import yaml

from device_conformance.core.errors import BadInput
from device_conformance.settings import Settings

if TYPE_CHECKING:
    from device_conformance.providers.kind.cli import KindCLI
    from device_conformance.providers.kind.layout import KindLayout


def config(settings: Settings, args: argparse.Namespace) -> int:
    """Print the kind config the suite would use for cluster --name (its per-node host directories made)."""
    from device_conformance.providers.kind import config as kind_config
    from device_conformance.providers.kind.dockerd import host_missing_capabilities
    from device_conformance.providers.kind.layout import KindLayout

    layout = KindLayout.for_cluster(args.name)
    rendered = kind_config.render(
        settings.k8s_version.value,
        layout,
        settings.kind_image.value,
        settings.kind_profile.value or kind_config.DEFAULT_PROFILE,
        host_lacks=host_missing_capabilities(),
    )
    layout.shared_dir.mkdir(parents=True, exist_ok=True)
    kind_config.write_registry_config(layout)
    for index in range(len(rendered["nodes"])):
        for host_dir in layout.node_mounts(index).values():
            host_dir.mkdir(parents=True, exist_ok=True)
    sys.stdout.write(yaml.safe_dump(rendered, sort_keys=False))
    print(f"# kind create cluster --config FILE, then: pytest suites --provider kind --kind-cluster {args.name}")
    return 0


def build_node_image(settings: Settings, args: argparse.Namespace) -> int:
    """Build a kind node image with no registry, cached by content; --load also loads it into Docker."""
    from device_conformance.toolchain.nodeimage.assemble import build_node_image as build

    image = build(settings.k8s_version.value, name=args.image, k8s_bin_dir=settings.k8s_bin_dir.value, progress=print)
    print(f"image {image.name}")
    print(f"tarball {image.tarball}")
    print(f"preloaded {', '.join(image.preloaded)}")
    if args.load:
        from device_conformance.host.dockercli import Docker

        print(Docker().text(["load", "-i", str(image.tarball)], timeout=1800).strip())
    print(f"use it: kind create cluster --image {image.name}")
    return 0


def list_clusters(_: Settings, __: argparse.Namespace) -> int:
    from device_conformance.providers.kind.state import KindState, all_layouts

    for layout in all_layouts():
        try:
            state = KindState.load(layout)
        except (OSError, ValueError, TypeError):
            print(f"{layout.cluster}  (no readable state)")
            continue
        status = "kept" if state.kept else ("left by a crash" if state.orphaned() else "in use")
        print(f"{layout.cluster}  v{state.k8s_version}  {state.profile}  {status}  KUBECONFIG={layout.kubeconfig}")
    return 0


def down(_: Settings, args: argparse.Namespace) -> int:
    """Delete the named clusters (or --all of them) this suite created; never another cluster."""
    from device_conformance.providers.kind.layout import KindLayout
    from device_conformance.providers.kind.provider import delete_created_cluster
    from device_conformance.providers.kind.state import all_layouts

    names = [layout.cluster for layout in all_layouts() if _created(layout)] if args.all else args.names
    if not names:
        raise BadInput(
            "no kind cluster of this suite on this host" if args.all else "no cluster named (none given)",
            "name clusters shown by `device-conformance cluster list --provider kind`, or pass --all",
        )
    layouts = [KindLayout.for_cluster(name) for name in names]
    for layout in layouts:
        if not _created(layout):
            raise BadInput(
                f"kind cluster {layout.cluster} was not created by this suite (no state in {layout.root})",
                f"delete it yourself if you mean to: kind delete cluster --name {layout.cluster}",
            )
    cli = _cli()
    for layout in layouts:
        delete_created_cluster(cli, layout, print)
    return 0


def cleanup(settings: Settings, _: argparse.Namespace) -> int:
    """Clusters left by crashed runs, after the private Docker engines of killed sessions (their clusters go
    with them; their host directories follow)."""
    from device_conformance.host.dockercli import Docker
    from device_conformance.providers.kind.dockerd import PrivateDockerd
    from device_conformance.providers.kind.provider import KindProvider

    PrivateDockerd.cleanup_stale(print)
    provider = KindProvider(settings.k8s_version.value)
    provider.cli = _cli() if Docker().answers() is None else None
    cleaned = provider.clean_orphans()
    print(f"cleaned {len(cleaned)} kind cluster(s)")
    return 0


def _created(layout: KindLayout) -> bool:
    """Its state file says this suite created it: only such clusters are ever deleted by us."""
    from device_conformance.providers.kind.state import KindState

    try:
        return KindState.load(layout).created
    except (OSError, ValueError, TypeError):
        return False


def _cli() -> KindCLI:
    from device_conformance.host.dockercli import Docker
    from device_conformance.providers.kind.cli import KindCLI
    from device_conformance.providers.kind.tools import find_kind

    kind = find_kind()
    if kind is None:
        raise BadInput("kind is not installed", "device-conformance setup --provider kind")
    return KindCLI(kind, Docker())
