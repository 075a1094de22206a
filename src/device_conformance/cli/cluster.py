"""`device-conformance setup` and `device-conformance cluster up|down|list|cleanup` (local provider)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from device_conformance.errors import BadInput
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, PREVIOUS_MINOR_VERSION, KubeVersion
from device_conformance.toolchain.binaries import ensure_binaries
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.containerd import ensure_containerd
from device_conformance.toolchain.images.build import build_images


def register(subparsers: argparse._SubParsersAction) -> None:
    setup = subparsers.add_parser(
        "setup", help="install what is missing: Debian packages, Kubernetes and containerd binaries, images"
    )
    _version_option(setup)
    setup.add_argument("--no-packages", action="store_true", help="do not apt-get install missing packages")
    setup.add_argument(
        "--provider",
        default=os.environ.get("PROVIDER") or "local",
        help="what to set up for: local (packages, Kubernetes binaries, images) or kind (Docker engine, kind, "
        "images); env PROVIDER",
    )
    setup.set_defaults(func=_setup)

    cluster = subparsers.add_parser("cluster", help="local clusters: up, down, list, cleanup")
    verbs = cluster.add_subparsers(dest="cluster_verb", required=True)
    up = verbs.add_parser("up", help="bring a local cluster up and keep it; prints its kubeconfig")
    _version_option(up)
    up.set_defaults(func=_up)
    down = verbs.add_parser("down", help="tear kept clusters down (nothing is left behind)")
    down.add_argument("run_ids", nargs="*", help="run ids from `cluster list`")
    down.add_argument("--all", action="store_true", help="every run on this machine")
    down.set_defaults(func=_down)
    verbs.add_parser("list", help="runs on this machine").set_defaults(func=_list)
    verbs.add_parser("cleanup", help="tear down runs left by crashed sessions").set_defaults(func=_cleanup)


def _version_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--k8s-version",
        default=os.environ.get("K8S_VERSION") or DEFAULT_K8S_VERSION,
        help=f"Kubernetes version (env K8S_VERSION; default {DEFAULT_K8S_VERSION})",
    )


def _setup(args: argparse.Namespace) -> int:
    if args.provider == "kind":
        from device_conformance.providers.kind.setup import setup_kind

        return setup_kind(KubeVersion.parse(args.k8s_version), install_packages=not args.no_packages)
    if args.provider not in ("local", "auto", ""):
        raise BadInput(f"setup knows the local and kind providers, not {args.provider!r}", "use --provider local|kind")
    from device_conformance.providers.local import host

    version = KubeVersion.parse(args.k8s_version)
    if not args.no_packages:
        if os.geteuid() != 0 and host.missing_packages():
            host.preflight()  # raises the "needs root" error with its fix
        installed = host.install_missing_packages()
        print(f"Debian packages: {'installed ' + ', '.join(installed) if installed else 'all present'}")
    binaries = ensure_binaries(version, user_dir=_bin_dir(), progress=print)
    print(f"Kubernetes {version.tag}: {binaries.directory} ({binaries.source})")
    _ensure_upgrade_kubelet(version)
    containerd = ensure_containerd(progress=print)
    print(f"containerd {containerd.version}: {containerd.directory} ({containerd.source})")
    for image in build_images(cache_root() / "images"):
        print(f"image {image.name}: {image.tarball}")
    return 0


def _ensure_upgrade_kubelet(version: KubeVersion) -> None:
    """The upgrade tests' starting kubelet (one minor below), so a fresh machine has it before the suite."""
    previous = KubeVersion.parse(os.environ.get("UPGRADE_FROM") or PREVIOUS_MINOR_VERSION)
    if (previous.major, previous.minor) != (version.major, version.minor - 1):
        print(f"upgrade tests: {previous} is not one minor below {version}; set UPGRADE_FROM to build theirs")
        return
    binaries = ensure_binaries(previous, progress=print)
    print(f"Kubernetes {previous.tag} (upgrade tests start from it): {binaries.directory} ({binaries.source})")


def _bin_dir() -> Path | None:
    value = os.environ.get("K8S_BIN_DIR")
    return Path(value) if value else None


def _up(args: argparse.Namespace) -> int:
    from device_conformance.providers.local.provider import LocalProvider

    provider = LocalProvider(KubeVersion.parse(args.k8s_version), bin_dir=_bin_dir())
    provider.up()
    print(provider.keep())
    return 0


def _down(args: argparse.Namespace) -> int:
    from device_conformance.providers.local.leftovers import all_runs
    from device_conformance.providers.local.teardown import teardown

    runs = {layout.run_id: layout for layout in all_runs()}
    wanted = list(runs) if args.all else args.run_ids
    unknown = [run_id for run_id in wanted if run_id not in runs]
    if unknown or not wanted:
        raise BadInput(
            f"no such run: {', '.join(unknown) or '(none given)'}",
            "name run ids shown by `device-conformance cluster list`, or pass --all",
        )
    failed = 0
    for run_id in wanted:
        problems = teardown(runs[run_id], print)
        print(f"{run_id}: {'down' if not problems else 'left behind: ' + '; '.join(problems)}")
        failed += bool(problems)
    return 1 if failed else 0


def _list(_: argparse.Namespace) -> int:
    from device_conformance.providers.local.leftovers import all_runs
    from device_conformance.providers.local.state import RunState

    for layout in all_runs():
        try:
            state = RunState.load(layout)
        except (OSError, ValueError, TypeError):
            print(f"{layout.run_id}  (no readable state: left by a crash; `cluster cleanup` removes it)")
            continue
        status = "kept" if state.kept else ("in use" if state.owner_alive() else "left by a crash")
        print(f"{layout.run_id}  v{state.k8s_version}  {status}  KUBECONFIG={layout.kubeconfig}")
    return 0


def _cleanup(_: argparse.Namespace) -> int:
    from device_conformance.providers.local.leftovers import clean_leftovers

    cleaned = clean_leftovers(print)
    print(f"cleaned {len(cleaned)} run(s)")
    return 0
