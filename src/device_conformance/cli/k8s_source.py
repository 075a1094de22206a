"""`device-conformance k8s-source get|build`: a Kubernetes source tree to test a patched kubelet with."""

from __future__ import annotations

import argparse
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.settings import KNOBS, resolve
from device_conformance.toolchain.binaries import ensure_binaries
from device_conformance.toolchain.source_get import get_tree


def register(subparsers: argparse._SubParsersAction) -> None:
    source = subparsers.add_parser("k8s-source", help="Kubernetes source trees: get one, build one (K8S_SOURCE)")
    verbs = source.add_subparsers(dest="k8s_source_verb", required=True)
    get = verbs.add_parser(
        "get",
        help="assemble a buildable tree of a release from the Go module proxy (k8s.io/kubernetes and its "
        "staging modules, placed as in a git checkout)",
    )
    get.add_argument("version", help="release, e.g. 1.37.1")
    get.add_argument("directory", type=Path, help="where the tree goes (must not exist, or be empty)")
    get.set_defaults(func=_get)
    build = verbs.add_parser(
        "build", help="build a tree's binaries into the cache now (what a session with K8S_SOURCE would use)"
    )
    build.add_argument("directory", nargs="?", help=KNOBS["k8s_source"].help_text())
    build.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    build.set_defaults(func=_build)


def _get(args: argparse.Namespace) -> int:
    version = KubeVersion.parse(args.version)
    get_tree(version, args.directory.absolute())
    print(f"K8S_SOURCE={args.directory.absolute()} (its version file says {version.tag}, no K8S_VERSION needed)")
    return 0


def _build(args: argparse.Namespace) -> int:
    settings = resolve({"k8s_source": args.directory, "k8s_version": args.k8s_version, "provider": "local"})
    if settings.k8s_source.value is None:
        raise BadInput("no source tree given", "name it: `device-conformance k8s-source build DIR`, or set K8S_SOURCE")
    binaries = ensure_binaries(settings.k8s_version.value, source_tree=settings.k8s_source.value, progress=print)
    print(f"Kubernetes {settings.k8s_version} from {settings.k8s_source.value}:")
    print(f"  {binaries.directory} ({binaries.source})")
    return 0
