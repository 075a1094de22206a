"""`device-conformance setup`: install what the chosen provider needs and is missing."""

from __future__ import annotations

import argparse

from device_conformance.settings import KNOBS, resolve


def register(subparsers: argparse._SubParsersAction) -> None:
    setup = subparsers.add_parser(
        "setup", help="install what is missing: Debian packages, Kubernetes and containerd binaries, images"
    )
    setup.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    setup.add_argument("--k8s-source", metavar="DIR", help=KNOBS["k8s_source"].help_text())
    setup.add_argument("--kubelet-version", metavar="X.Y.Z", help=KNOBS["kubelet_version"].help_text())
    setup.add_argument("--no-packages", action="store_true", help="do not apt-get install missing packages")
    setup.add_argument(
        "--provider",
        help="what to set up for: local (packages, Kubernetes binaries, images), kind (Docker engine, kind, images) "
        f"or existing (nothing); {KNOBS['provider'].help_text()}",
    )
    setup.set_defaults(func=_setup)


def _setup(args: argparse.Namespace) -> int:
    return setup_for(
        provider=args.provider,
        k8s_version=args.k8s_version,
        k8s_source=args.k8s_source,
        kubelet_version=args.kubelet_version,
        install_packages=not args.no_packages,
    )


def setup_for(
    *,
    provider: str | None,
    k8s_version: str | None,
    k8s_source: str | None = None,
    kubelet_version: str | None = None,
    install_packages: bool = True,
) -> int:
    """`device-conformance setup` for these knobs (None: the environment's or the default)."""
    settings = resolve(
        {
            "k8s_version": k8s_version,
            "k8s_source": k8s_source,
            "kubelet_version": kubelet_version,
            "provider": provider,
        }
    )
    setup = settings.capabilities.setup
    if setup is None:
        # As `make setup PROVIDER=existing`: the cluster is there already (also when auto picked it).
        print(f"provider {settings.provider}: nothing to set up")
        return 0
    from device_conformance.providers import load

    code: int = load(setup)(settings, install_packages=install_packages)
    return code
