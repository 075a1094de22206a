"""`device-conformance kind render|list|delete|cleanup`: the kind provider's clusters outside pytest."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import yaml

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION
from device_conformance.settings import KNOBS, resolve

if TYPE_CHECKING:
    from device_conformance.providers.kind.cli import KindCLI


def register(subparsers: argparse._SubParsersAction) -> None:
    kind = subparsers.add_parser("kind", help="kind clusters of this suite: render a config, list, delete, cleanup")
    verbs = kind.add_subparsers(dest="kind_verb", required=True)
    render = verbs.add_parser("render", help="print the kind config the suite would use (per-node host dirs made)")
    render.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    render.add_argument("--name", default="dc-manual", help="cluster name (default dc-manual)")
    render.add_argument("--profile", help=KNOBS["kind_profile"].help_text())
    render.add_argument("--image", help=KNOBS["kind_image"].help_text())
    render.set_defaults(func=_render)
    verbs.add_parser("list", help="clusters this suite created on this host").set_defaults(func=_list)
    delete = verbs.add_parser("delete", help="delete clusters this suite created (never others)")
    delete.add_argument("names", nargs="+")
    delete.set_defaults(func=_delete)
    verbs.add_parser("cleanup", help="delete clusters left by crashed runs").set_defaults(func=_cleanup)
    build = verbs.add_parser(
        "build-node-image",
        help="build a kind node image with no registry (Debian packages and Go modules only), cached by content",
    )
    build.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    build.add_argument("--k8s-bin-dir", help=KNOBS["k8s_bin_dir"].help_text())
    build.add_argument(
        "--image", help="name of the image (default device-conformance.local/kind-node:vX.Y.Z of --k8s-version)"
    )
    build.add_argument(
        "--load",
        action="store_true",
        help="also `docker load` it into the Docker engine of DOCKER_HOST (or the default)",
    )
    build.set_defaults(func=_build_node_image)


def _render(args: argparse.Namespace) -> int:
    from device_conformance.providers.kind import config
    from device_conformance.providers.kind.layout import KindLayout

    settings = resolve(
        {"k8s_version": args.k8s_version, "kind_profile": args.profile, "kind_image": args.image, "provider": "kind"},
        option_names={"kind_profile": "--profile", "kind_image": "--image"},
    )
    version = settings.k8s_version.value
    layout = KindLayout.for_cluster(args.name)
    from device_conformance.providers.kind.dockerd import host_missing_capabilities

    rendered = config.render(
        version,
        layout,
        settings.kind_image.value,
        settings.kind_profile.value or config.DEFAULT_PROFILE,
        host_lacks=host_missing_capabilities(),
    )
    layout.shared_dir.mkdir(parents=True, exist_ok=True)
    config.write_registry_config(layout)
    for index in range(len(rendered["nodes"])):
        for host_dir in layout.node_mounts(index).values():
            host_dir.mkdir(parents=True, exist_ok=True)
    sys.stdout.write(yaml.safe_dump(rendered, sort_keys=False))
    print(f"# kind create cluster --config FILE, then: pytest suites --provider kind --kind-cluster {args.name}")
    return 0


def _build_node_image(args: argparse.Namespace) -> int:
    from device_conformance.toolchain.nodeimage.assemble import build_node_image

    settings = resolve(
        {"k8s_version": args.k8s_version, "k8s_bin_dir": args.k8s_bin_dir, "provider": "kind"},
        option_names={"k8s_bin_dir": "--k8s-bin-dir"},
    )
    image = build_node_image(
        settings.k8s_version.value, name=args.image, k8s_bin_dir=settings.k8s_bin_dir.value, progress=print
    )
    print(f"image {image.name}")
    print(f"tarball {image.tarball}")
    print(f"preloaded {', '.join(image.preloaded)}")
    if args.load:
        from device_conformance.host.dockercli import Docker

        print(Docker().text(["load", "-i", str(image.tarball)], timeout=1800).strip())
    print(f"use it: kind create cluster --image {image.name}")
    return 0


def _cli() -> KindCLI:
    from device_conformance.host.dockercli import Docker
    from device_conformance.providers.kind.cli import KindCLI
    from device_conformance.providers.kind.tools import find_kind

    kind = find_kind()
    if kind is None:
        raise BadInput("kind is not installed", "device-conformance setup --provider kind")
    return KindCLI(kind, Docker())


def _list(_: argparse.Namespace) -> int:
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


def _delete(args: argparse.Namespace) -> int:
    from device_conformance.providers.kind.layout import KindLayout
    from device_conformance.providers.kind.provider import delete_created_cluster
    from device_conformance.providers.kind.state import KindState

    cli = _cli()
    for name in args.names:
        layout = KindLayout.for_cluster(name)
        try:
            created = KindState.load(layout).created
        except (OSError, ValueError, TypeError):
            created = False
        if not created:
            raise BadInput(
                f"kind cluster {name} was not created by this suite (no state in {layout.root})",
                f"delete it yourself if you mean to: kind delete cluster --name {name}",
            )
        delete_created_cluster(cli, layout, print)
    return 0


def _cleanup(_: argparse.Namespace) -> int:
    from device_conformance.host.dockercli import Docker
    from device_conformance.providers.kind.dockerd import PrivateDockerd
    from device_conformance.providers.kind.provider import KindProvider

    # A killed session's private dockerd goes first, its clusters with it; their host directories follow.
    PrivateDockerd.cleanup_stale(print)
    provider = KindProvider(DEFAULT_K8S_VERSION)
    provider.cli = _cli() if Docker().answers() is None else None
    cleaned = provider.clean_orphans()
    print(f"cleaned {len(cleaned)} kind cluster(s)")
    return 0
