"""`device-conformance setup` and `device-conformance cluster up|down|list|cleanup` (local provider)."""

from __future__ import annotations

import argparse

from device_conformance.core.errors import BadInput
from device_conformance.settings import KNOBS, Settings, resolve


def register(subparsers: argparse._SubParsersAction) -> None:
    setup = subparsers.add_parser(
        "setup", help="install what is missing: Debian packages, Kubernetes and containerd binaries, images"
    )
    _version_option(setup)
    setup.add_argument("--no-packages", action="store_true", help="do not apt-get install missing packages")
    setup.add_argument(
        "--provider",
        help="what to set up for: local (packages, Kubernetes binaries, images) or kind (Docker engine, kind, "
        "images); env PROVIDER, default local",
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
    parser.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    parser.add_argument("--k8s-source", metavar="DIR", help=KNOBS["k8s_source"].help_text())
    parser.add_argument("--kubelet-version", metavar="X.Y.Z", help=KNOBS["kubelet_version"].help_text())


def _settings(args: argparse.Namespace, provider: str | None = None) -> Settings:
    return _resolved(
        provider=provider or getattr(args, "provider", None),
        k8s_version=args.k8s_version,
        k8s_source=args.k8s_source,
        kubelet_version=args.kubelet_version,
    )


def _resolved(
    *, provider: str | None, k8s_version: str | None, k8s_source: str | None, kubelet_version: str | None
) -> Settings:
    """The settings for these knobs; None: the environment's or the default."""
    return resolve(
        {
            "k8s_version": k8s_version,
            "k8s_source": k8s_source,
            "kubelet_version": kubelet_version,
            "provider": provider,
        }
    )


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
    settings = _resolved(
        provider=provider, k8s_version=k8s_version, k8s_source=k8s_source, kubelet_version=kubelet_version
    )
    setup = settings.capabilities.setup
    if setup is None:
        # As `make setup PROVIDER=existing`: the cluster is there already (also when auto picked it).
        print(f"provider {settings.provider}: nothing to set up")
        return 0
    from device_conformance.providers import load

    code: int = load(setup)(settings, install_packages=install_packages)
    return code


def _up(args: argparse.Namespace) -> int:
    from device_conformance.providers import make_provider

    provider = make_provider(_settings(args, provider="local"), log=print)
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
    from device_conformance.providers.kind.dockerd import PrivateDockerd

    # Private Docker engines of kind sessions that were killed before they could stop them.
    engines = PrivateDockerd.cleanup_stale(print)
    if engines:
        print(f"stopped {len(engines)} private dockerd(s) left by killed kind sessions")
    from device_conformance.toolchain.go_tmpdir import go_tmp_root, remove_orphans

    orphans = remove_orphans(go_tmp_root())
    if orphans:
        print(f"removed the Go work directories of {len(orphans)} killed process(es) under {go_tmp_root()}")
    return 0
