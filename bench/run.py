"""Benchmarks of the harness on real local clusters: a table on the terminal, JSON and a PNG in bench/results/.

In one run (README, "Benchmarks"):

1. bring-up: bring-up to node Ready (cold image cache, then warm; Kubernetes binaries cached in both),
   graceful kubelet restart to node Ready, pod create to Running, device plugin Register to allocatable,
   kubelet restart to the plugin re-registered, teardown;
2. our waits against their floors (bench/waits/): per sample, the wall time of the call a suite test
   makes, next to when the state itself was there (a watch event; /healthz polled every 10 ms), for
   kubelet restart to healthy, plugin Register to allocatable, pod create to Running and a NoExecute
   taint to the eviction; the ratio is our waits' overhead;
3. the suite's wall time at 1, 2 and 3 xdist workers (one cluster each; by default the CI subset, the
   `-m` of .ci/run), with each test's own time; --skip-suite leaves this part out for a quick run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
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

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).parent / "results"
CI_SUBSET = "smoke or ((deviceplugin or dra or taints) and not slow)"
CI_RUN = ROOT / ".ci" / "run"


def ci_kind_subset(ci_run: Path = CI_RUN) -> str:
    """.ci/run's KIND_SUBSET (the -k expression of CI's kind part): one definition for CI and the bench."""
    match = re.search(r'^KIND_SUBSET="([^"]*)"', ci_run.read_text(), re.MULTILINE)
    if match is None:
        raise SystemExit(f'no KIND_SUBSET="..." in {ci_run}')
    return match.group(1).replace("\\\n", "")


def timed(action) -> float:
    started = time.monotonic()
    action()
    return time.monotonic() - started


# ---- 1. bring-up and single operations ------------------------------------------------------------
def one_round(version: KubeVersion, label: str, results: dict[str, list[float]]) -> None:
    provider = LocalProvider(version, log=lambda _: None)
    started = time.monotonic()
    handle = provider.up()
    results.setdefault(label, []).append(time.monotonic() - started)
    kube = Kube.from_kubeconfig(handle.kubeconfig)
    node = handle.nodes[0]
    try:
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
    finally:
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


def bring_up(version: KubeVersion, repeats: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    shutil.rmtree(cache_root() / "images", ignore_errors=True)
    for round_ in range(repeats):
        one_round(version, "bring-up cold images" if round_ == 0 else "bring-up warm", results)
    return results


# ---- 2. our waits against their floors --------------------------------------------------------------
def wait_overheads(version: KubeVersion, samples: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "waits.json"
        argv = [
            sys.executable, "-m", "pytest", str(ROOT / "bench" / "waits"), "-p", "no:cacheprovider", "-q",
            "--provider", "local", "--k8s-version", str(version),
        ]  # fmt: skip
        env = {**os.environ, "BENCH_WAITS_JSON": str(out), "BENCH_SAMPLES": str(samples)}
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
        summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""
        samples_by_case = json.loads(out.read_text()) if out.exists() else {}
    cases = {}
    for case, rows in samples_by_case.items():
        waits = [row["wait_s"] for row in rows]
        floors = [row["floor_s"] for row in rows]
        cases[case] = {
            "samples": rows,
            "wait_median_s": statistics.median(waits),
            "floor_median_s": statistics.median(floors),
            "overhead_ratio": statistics.median(w / f for w, f in zip(waits, floors, strict=True) if f > 0),
        }
    return {"pytest": summary, "returncode": proc.returncode, "cases": cases, "output_tail": proc.stdout[-3000:]}


# ---- 3. suite wall time by worker count ---------------------------------------------------------------
def suite_time(version: KubeVersion, workers: int, marks: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        argv = [
            sys.executable, "-m", "pytest", "suites", "-n", str(workers), "--dist", "loadgroup",
            "-p", "no:cacheprovider", "-q", "-rfE", "--k8s-version", str(version), f"--junitxml={junit}",
        ]  # fmt: skip
        if marks:
            argv += ["-m", marks]
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - started
        tests = read_junit(junit) if junit.exists() else {}
    lines = proc.stdout.strip().splitlines()
    return {
        "workers": workers,
        "marks": marks,
        "wall_s": wall,
        "pytest": lines[-1] if lines else "",
        "returncode": proc.returncode,
        "tests_s": tests,
        # What failed and why, so a slow or failed run can be judged from the JSON alone.
        "failures": [line for line in lines if line.startswith(("FAILED", "ERROR"))],
    }


def read_junit(path: Path) -> dict[str, dict]:
    tests = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = tag
        tests[f"{case.get('classname')}::{case.get('name')}"] = {"s": float(case.get("time", 0)), "outcome": outcome}
    return tests


# ---- report -------------------------------------------------------------------------------------------
def plot(report: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    suites = report.get("suite", [])
    cases = report.get("waits", {}).get("cases", {})
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5))
    if suites:
        labels = [str(run["workers"]) for run in suites]
        minutes = [run["wall_s"] / 60 for run in suites]
        bars = left.bar(labels, minutes, color="#4477aa")
        for bar, run in zip(bars, suites, strict=True):
            left.annotate(
                f"{run['wall_s'] / 60:.1f} min\n{run['pytest'].split(' in ')[0].replace(', ', chr(10))}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center", va="bottom", fontsize=7,
            )  # fmt: skip
        left.set_ylim(0, max(minutes) * 1.3)
        left.set_xlabel("xdist workers (one local cluster each)")
        left.set_ylabel("suite wall time (min)")
        left.set_title(f"-m '{suites[0]['marks'] or 'all'}'", fontsize=8)
    else:
        left.text(0.5, 0.5, "suite wall time not measured (--skip-suite)", ha="center", va="center")
        left.set_axis_off()
    if cases:
        names = list(cases)
        x = range(len(names))
        floors = [cases[n]["floor_median_s"] for n in names]
        waits = [cases[n]["wait_median_s"] for n in names]
        right.bar([i - 0.2 for i in x], floors, width=0.4, label="floor: the state itself (watch / 10 ms poll)")
        right.bar([i + 0.2 for i in x], waits, width=0.4, label="our wait (what the suites call)")
        for i, name in enumerate(names):
            right.annotate(f"x{cases[name]['overhead_ratio']:.2f}", (i + 0.2, waits[i]), ha="center", va="bottom")
        right.set_xticks(list(x), [n.replace(" to ", "\nto ") for n in names], fontsize=8)
        right.set_ylabel("seconds (median)")
        right.set_title("per-wait overhead (ratio our wait / floor)", fontsize=9)
        right.legend(fontsize=7)
    fig.suptitle(f"device-conformance bench, Kubernetes {report['k8s_version']}, {report['host']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def print_report(report: dict) -> None:
    print(f"{'measurement':44} {'n':>3} {'median s':>9} {'min s':>7} {'max s':>7}")
    for name, values in report.get("bring_up", {}).items():
        print(f"{name:44} {len(values):3} {statistics.median(values):9.2f} {min(values):7.2f} {max(values):7.2f}")
    cases = report.get("waits", {}).get("cases", {})
    if cases:
        print(f"\n{'wait':44} {'wait s':>7} {'floor s':>8} {'ratio':>6}   ({report['waits']['pytest']})")
        for name, case in cases.items():
            print(f"{name:44} {case['wait_median_s']:7.2f} {case['floor_median_s']:8.2f} {case['overhead_ratio']:6.2f}")
    for run in report.get("suite", []):
        print(f"suite at {run['workers']} workers: {run['wall_s']:.1f} s wall ({run['pytest']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    parser.add_argument("--repeats", type=int, default=2, help="bring-up rounds (the first with a cold image cache)")
    parser.add_argument("--samples", type=int, default=3, help="samples of each wait")
    parser.add_argument("--skip-suite", action="store_true", help="leave out the suite wall times (a quick run)")
    parser.add_argument("--workers", default="1,2,3", help="worker counts to time the suite at")
    parser.add_argument("--marks", default=CI_SUBSET, help="the suite's -m expression ('' for every test)")
    args = parser.parse_args()
    version = resolve({"k8s_version": args.k8s_version, "provider": "local"}).k8s_version.value
    report: dict = {
        "k8s_version": str(version),
        "host": f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30} GiB",
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if args.repeats:
        report["bring_up"] = bring_up(version, args.repeats)
    if args.samples:
        report["waits"] = wait_overheads(version, args.samples)
    if not args.skip_suite:
        report["suite"] = [suite_time(version, int(n), args.marks) for n in args.workers.split(",")]
    print_report(report)
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"bench-{time.strftime('%Y%m%dT%H%M%S')}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    plot(report, stem.with_suffix(".png"))
    print(f"wrote {stem}.json and {stem}.png")


if __name__ == "__main__":
    main()
