"""An API server for `certify dra-test-driver`: upstream's DRA test driver reads every claim it prepares from
there. Its kubelet plugin is built on k8s.io/dynamic-resource-allocation/kubeletplugin, whose
NodePrepareResources (draplugin.go, nodePluginImplementation.getResourceClaims) gets each claim of the call
from the API server, fails the whole call when one is missing, has no status.allocation or another UID, and
only then hands the claims to the driver. So its claim clauses need allocated ResourceClaims: this module brings
up a local cluster as `device-conformance cluster up` does (providers/local) and tears it down afterwards, also
on Ctrl-C or SIGTERM; the claims are made on it as `certify dra-driver --claims auto` makes them
(certify/dra_auto_claims.py), from the slices the driver publishes once it serves: one way for both verbs.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from device_conformance.certify.upstream import NO_CLUSTER_NODE
from device_conformance.expectations.versions import KubeVersion


@dataclass
class ApiServer:
    """What the test driver and DraDriverTarget need: the API server (None: no cluster, one that leads nowhere)
    and the node the driver runs for."""

    kubeconfig: Path | None
    node_name: str


def _sigterm_as_interrupt(_signum: int, _frame: FrameType | None) -> None:
    # CI stops runs with SIGTERM; as Ctrl-C it reaches the finally that tears the cluster down
    # (fixtures/cluster.py does the same for the suites' session cluster).
    raise KeyboardInterrupt


@contextmanager
def local_cluster(version: KubeVersion, log: Callable[[str], None] = print) -> Iterator[ApiServer]:
    """A local cluster of `version` (the settings of `cluster up`: K8S_BIN_DIR, K8S_SOURCE, ... from the
    environment); torn down on leaving, also on Ctrl-C or SIGTERM (the teardown itself defers both,
    providers/local/teardown.py)."""
    from device_conformance.providers import make_provider
    from device_conformance.settings import resolve

    provider = make_provider(resolve({"k8s_version": str(version), "provider": "local"}), log=log)
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt)
    try:
        handle = provider.up()
        yield ApiServer(handle.kubeconfig, handle.nodes[0].name)
    finally:
        try:
            provider.down()
        finally:
            signal.signal(signal.SIGTERM, previous)


@contextmanager
def api_server(version: KubeVersion, *, cluster: bool, log: Callable[[str], None] = print) -> Iterator[ApiServer]:
    """local_cluster(), or with cluster=False (`--no-cluster`) no API server: the claim clauses and DRA-SLICES
    are then NOT APPLICABLE."""
    if not cluster:
        yield ApiServer(None, NO_CLUSTER_NODE)
        return
    with local_cluster(version, log) as api:
        yield api
