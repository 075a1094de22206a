"""Our waits against their floors (run by bench/run.py, not by `make e2e`): each sample times the same
call a suite test makes, from the action to the wait's return, next to the moment the state itself
was there (bench/waits/first_seen.py; for /healthz a 10 ms poll). The ratio wait / floor is the
overhead of our waits (their polling intervals, their extra reads).

Writes {case: [{"wait_s", "floor_s"}...]} to $BENCH_WAITS_JSON.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from first_seen import FirstSeen, allocatable_is, has_condition, running_ready

from device_conformance.core import timeouts
from device_conformance.kube import dra

SAMPLES = int(os.environ.get("BENCH_SAMPLES", "3"))
RESULTS: dict[str, list[dict[str, float]]] = {}


@pytest.fixture(scope="module", autouse=True)
def _write_results():
    yield
    out = os.environ.get("BENCH_WAITS_JSON")
    if out:
        Path(out).write_text(json.dumps(RESULTS, indent=1))


def record(case: str, started: float, waited: float, floor: float) -> None:
    RESULTS.setdefault(case, []).append({"wait_s": waited - started, "floor_s": floor - started})


class HealthyAgain:
    """Polls the kubelet's /healthz every 10 ms: when it first answers after it stopped answering."""

    def __init__(self, kubelet) -> None:
        self.kubelet = kubelet
        self.went_down = False
        self.at: float | None = None
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if not self.kubelet.healthy():
                self.went_down = True
            elif self.went_down:
                self.at = time.monotonic()
                return
            time.sleep(0.01)

    def wait(self, timeout: float) -> float:
        self._thread.join(timeout)
        assert self.at is not None, f"the 10 ms poll never saw the kubelet healthy again (went down: {self.went_down})"
        return self.at


def test_kubelet_restart_to_healthy(node):
    """node.kubelet.restart() (graceful stop, start, wait for /healthz) against /healthz polled every 10 ms.

    A graceful restart keeps the node Ready throughout (the node lifecycle controller waits its grace
    period before NotReady), so /healthz answering again is the state a restart waits on."""
    for _ in range(SAMPLES):
        started = time.monotonic()
        floor = HealthyAgain(node.kubelet)
        node.kubelet.restart(wait_ready=False)  # what this measures: the restart to /healthz
        waited = time.monotonic()
        record("kubelet restart to healthy", started, waited, floor.wait(30))


def test_plugin_register_to_allocatable(kube, node, device_plugin, node_resource):
    """A held-back plugin registers; node_resource().wait_counts (what register_plugin waits with)
    against the watch event showing allocatable 2."""
    for _ in range(SAMPLES):
        plugin = device_plugin(hold_registration=True)
        resource = plugin.config.resource_name
        seen = FirstSeen(
            kube, kube.core.list_node, allocatable_is(resource, 2), field_selector=f"metadata.name={node.name}"
        )
        started = time.monotonic()
        plugin.hold_registration(False)
        node_resource(resource).wait_counts(2, 2, timeouts.DEVICE_COUNTS)
        waited = time.monotonic()
        record("plugin Register to allocatable", started, waited, seen.wait(30))


def test_pod_create_to_running(kube, namespace, pod_factory):
    """pod_factory + wait_running (Running and Ready) against the watch event showing it so."""
    for i in range(SAMPLES):
        prefix = f"bench{i}-"
        seen = FirstSeen(
            kube,
            kube.core.list_namespaced_pod,
            lambda obj, prefix=prefix: obj["metadata"]["name"].startswith(prefix) and running_ready(obj),
            namespace=namespace,
        )
        started = time.monotonic()
        pod = pod_factory(prefix.rstrip("-"), ["sleep", "3600"])
        pod.wait_running()
        waited = time.monotonic()
        record("pod create to Running", started, waited, seen.wait(60))


def test_noexecute_taint_to_eviction(kube, namespace, dra_driver, dra_objects):
    """A NoExecute taint on the pod's device in the ResourceSlice; pod.wait_condition("DisruptionTarget")
    (what the taints suite waits with) against the watch event showing the condition."""
    for i in range(SAMPLES):
        driver = dra_driver(devices=("dev-0",))
        pod = dra_objects.claim_pod(f"evict{i}", driver, keep=True)
        pod.wait_running()
        (device,) = pod.allocated_devices()
        seen = FirstSeen(
            kube,
            kube.core.list_namespaced_pod,
            has_condition("DisruptionTarget"),
            namespace=namespace,
            field_selector=f"metadata.name={pod.name}",
        )
        started = time.monotonic()
        driver.set_taints(device, [dra.device_taint("example.com/bench", "NoExecute")])
        pod.wait_condition("DisruptionTarget", timeout=timeouts.TAINT_EVICTION)
        waited = time.monotonic()
        record("NoExecute taint to eviction", started, waited, seen.wait(60))
