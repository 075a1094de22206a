"""The clusters of xdist workers that died before their teardown, torn down by the controller at its end.

A worker tears its own cluster down (fixtures/cluster.py, Ctrl-C held over it: core/interrupts.py), but xdist
does not always let it finish. On a Ctrl-C the controller ends its gateways at once (xdist/workermanage.py
NodeManager.teardown_nodes: execnet Group.terminate with EXIT_TIMEOUT = 10 s, then kill), and the worker's side
of the gateway sends its own process a SIGINT after 5 s and calls os._exit(1) 10 s later (execnet
gateway_base.py WorkerGateway._terminate_execution): a test teardown longer than that (pods deleted on a busy
machine) leaves the cluster running with no owner. A worker that crashes leaves its cluster the same way.

So the controller, the one process that outlives its workers, sweeps once they are gone: the provider's
`leftovers` capability tears down every cluster of its kind whose owning process is gone, as each bring-up
already does before it starts (providers/local/provider.py `up`). Without xdist the session's own process tears
its cluster down (fixtures/cluster.py pytest_unconfigure), so there is nothing to sweep.
"""

from __future__ import annotations

from functools import partial

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.core.interrupts import deferred_interrupts
from device_conformance.fixtures.session import say, session_settings


def is_xdist_controller(config: pytest.Config) -> bool:
    """The process that spawned xdist workers (not a worker, and not a run without xdist)."""
    return not hasattr(config, "workerinput") and bool(getattr(config.option, "numprocesses", None))


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    if not is_xdist_controller(config) or getattr(config.option, "collectonly", False):
        return
    try:
        settings = session_settings(config)
    except BadInput:
        return  # no provider was usable: no worker brought a cluster up
    target = settings.capabilities.leftovers
    if target is None:
        return
    from device_conformance.providers import load

    log = partial(say, config)
    with deferred_interrupts(log):
        swept = load(target)(log)
    if swept:
        say(
            config, f"tore down {len(swept)} cluster(s) of workers that ended before their teardown: {', '.join(swept)}"
        )
