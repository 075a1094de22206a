"""Benchmarks of the harness on a real local cluster: prints a table, writes JSON to bench/results/.

Measured: bring-up to node Ready with a cold image cache and again warm (Kubernetes binaries cached in
both), graceful kubelet restart to node Ready, pod create to Running, device plugin Register to
allocatable on the node, kubelet restart to the plugin re-registered, teardown.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from device_conformance.expectations.versions import KubeVersion
from device_conformance.fakes.device_plugin import DeviceConfig, DevicePluginConfig, DevicePluginHandle
from device_conformance.kube import pods
from device_conformance.kube.client import Kube
from device_conformance.providers.local.provider import LocalProvider
from device_conformance.settings import KNOBS, resolve
from device_conformance.toolchain.cache import cache_root
from device_conformance.wait import kube as wait
from device_conformance.wait.core import until

RESULTS = Path(__file__).parent / "results"


def timed(action) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


def one_round(version: KubeVersion, label: str, results: dict[str, list[float]]) -> None:
    provider = LocalProvider(version, log=lambda _: None)
    started = time.monotonic()
    handle = provider.up()
    results.setdefault(label, []).append(time.monotonic() - started)
    kube = Kube.from_kubeconfig(handle.kubeconfig)
    node = handle.nodes[0]
    for _ in range(3):
        results.setdefault("kubelet restart to node Ready", []).append(
            timed(lambda: (node.kubelet.restart(), wait.for_node_ready(kube, node.name)))
        )
    kube.core.create_namespace({"metadata": {"name": "bench"}})
    until(lambda: kube.core.read_namespaced_service_account("default", "bench"), what="default SA", timeout=60)
    for i in range(3):
        manifest = pods.pod_manifest(f"p{i}", ["sleep", "3600"], restart_policy="Always")
        started = time.monotonic()
        pods.create(kube, "bench", manifest)
        wait.for_pod_running_ready(kube, "bench", manifest["metadata"]["name"])
        results.setdefault("pod create to Running", []).append(time.monotonic() - started)
    device_plugin_round(kube, node, results)
    kube.close()
    results.setdefault("teardown", []).append(timed(provider.down))


def device_plugin_round(kube: Kube, node, results: dict[str, list[float]]) -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as workdir:
        for i in range(3):
            resource = f"bench-{i}-{time.monotonic_ns() % 10**6}.example.com/dev"
            config = DevicePluginConfig(
                resource_name=resource,
                socket_dir=str(node.host_path("/var/lib/kubelet/device-plugins")),
                socket_name=f"bench-{i}.sock",
                devices=[DeviceConfig("dev-0"), DeviceConfig("dev-1")],
                hold_registration=True,
            )
            plugin = DevicePluginHandle.start(config, Path(workdir) / str(i))
            try:
                started = time.monotonic()
                plugin.hold_registration(False)
                wait.for_resource_counts(kube, node.name, resource, 2, 2, timeout=30)
                results.setdefault("plugin Register to allocatable", []).append(time.monotonic() - started)
                started = time.monotonic()
                node.kubelet.restart()
                plugin.wait_for_registration(count=2, timeout=30)
                results.setdefault("kubelet restart to plugin re-registered", []).append(time.monotonic() - started)
            finally:
                plugin.stop()
                plugin.cleanup()


def bench(version: KubeVersion, repeats: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    shutil.rmtree(cache_root() / "images", ignore_errors=True)
    for round_ in range(repeats):
        one_round(version, "bring-up cold images" if round_ == 0 else "bring-up warm", results)
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    version = resolve({"k8s_version": args.k8s_version, "provider": "local"}).k8s_version.value
    results = bench(version, args.repeats)
    print(f"{'measurement':40} {'n':>3} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, values in results.items():
        print(f"{name:40} {len(values):3} {statistics.median(values):9.2f} {min(values):7.2f} {max(values):7.2f}")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"bench-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps({"k8s_version": str(version), "seconds": results}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
