"""`device-conformance cluster up|list|down|cleanup --provider local`: this host's local clusters (runs). Each
function is named in settings.PROVIDER_CAPABILITIES["local"].cluster_verbs and called by cli/cluster.py as
(settings, args) -> exit status."""

from __future__ import annotations

import argparse

from device_conformance.core.errors import BadInput
from device_conformance.settings import Settings


def up(settings: Settings, _: argparse.Namespace) -> int:
    """Bring a cluster up and keep it; its kubeconfig and how to delete it are printed."""
    from device_conformance.providers import make_provider

    provider = make_provider(settings, log=print)
    provider.up()
    print(provider.keep())
    return 0


def list_runs(_: Settings, __: argparse.Namespace) -> int:
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


def down(_: Settings, args: argparse.Namespace) -> int:
    """Tear the named runs (or --all) down; 1 when one left something behind."""
    from device_conformance.providers.local.leftovers import all_runs
    from device_conformance.providers.local.teardown import teardown

    runs = {layout.run_id: layout for layout in all_runs()}
    wanted = list(runs) if args.all else args.names
    unknown = [run_id for run_id in wanted if run_id not in runs]
    if unknown or not wanted:
        raise BadInput(
            f"no such run: {', '.join(unknown) or '(none given)'}",
            "name run ids shown by `device-conformance cluster list --provider local`, or pass --all",
        )
    failed = 0
    for run_id in wanted:
        problems = teardown(runs[run_id], print)
        print(f"{run_id}: {'down' if not problems else 'left behind: ' + '; '.join(problems)}")
        failed += bool(problems)
    return 1 if failed else 0


def cleanup(_: Settings, __: argparse.Namespace) -> int:
    """Runs left by crashed sessions, and what else a killed process leaves on this host: the private Docker
    engines of kind sessions and the Go work directories."""
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
