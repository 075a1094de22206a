"""Benchmarks of the harness on real local clusters: a table on the terminal, JSON and a PNG in bench/results/.

In one run (docs/benchmarks.md):

1. bring-up: bring-up to node Ready (cold image cache, then warm; Kubernetes binaries cached in both),
   graceful kubelet restart to node Ready, pod create to Running, device plugin Register to allocatable,
   kubelet restart to the plugin re-registered, teardown;
2. our waits against their floors (bench/waits/): per sample, the wall time of the call a suite test
   makes, next to when the state itself was there (a watch event; /healthz polled every 10 ms), for
   kubelet restart to healthy, plugin Register to allocatable, pod create to Running and a NoExecute
   taint to the eviction; the ratio is our waits' overhead;
3. the suite's wall time at 1, 2 and 3 xdist workers and at the `-n auto` count (one cluster each; by
   default the CI subset, the
   `-m` of .ci/run), with each test's own time; --skip-suite leaves this part out for a quick run;
4. patched build: a fresh `k8s-source get` tree of the (cached) release, one log line changed in the kubelet's
   device manager, built as K8S_SOURCE builds it (`device-conformance k8s-source build`), against a 90 s
   target; the tree is removed afterwards. `--only patched-build` runs this part alone.

--provider kind (`make bench PROVIDER=kind`) puts kind figures next to the local ones in one table: cluster
create to node Ready, kubelet restart to node Ready, pod create to Running (on a kind cluster in the Docker
engine that answers, else in a private dockerd as the suites start it), our node image build cached (a no-op
rebuild) and, with --kind-cold-image, built into an empty image cache; and the wall time of CI's kind subset
(.ci/run's KIND_SUBSET) at 2 workers on both providers, as a ratio. Parts 2 and 3 (local) are left out there
unless asked for (--samples N, --workers).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
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
from device_conformance.toolchain.binaries import COMPONENTS, binary_source
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.gobuild import go_binary, stale_packages
from device_conformance.toolchain.source_build import BUILD_FLAGS, build_env, command_packages
from device_conformance.toolchain.source_get import get_tree
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
    try:
        kube_ops(handle, results)
        kube = Kube.from_kubeconfig(handle.kubeconfig)
        try:
            device_plugin_round(kube, handle.nodes[0], results)
        finally:
            kube.close()
    finally:
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


# ---- 1b. the same on kind --------------------------------------------------------------------------
def kind_round(version: KubeVersion, results: dict[str, list[float]], repeats: int) -> dict:
    """Single operations on kind clusters (one per round) in the engine the suites would use."""
    from device_conformance.expectations.kind import default_node_image
    from device_conformance.host.dockercli import Docker
    from device_conformance.providers.kind.engine import ensure_engine, ensure_node_image, release_engine
    from device_conformance.providers.kind.provider import KindProvider

    previous = os.environ.get("DOCKER_HOST")
    started = time.monotonic()
    engine = ensure_engine(log=print)
    info: dict = {"engine": "private dockerd (started by the bench)" if engine else "the Docker engine that answered"}
    try:
        if engine is not None:
            info["private dockerd start s"] = time.monotonic() - started
        started = time.monotonic()
        image = ensure_node_image(Docker(), version, default_node_image(version), ours=True, log=print)
        info["node image"] = image
        info["node image into the engine s"] = time.monotonic() - started
        for _ in range(repeats):
            provider = KindProvider(version, image=image, log=lambda _: None)
            provider.prepare()
            started = time.monotonic()
            handle = provider.up()
            results.setdefault("cluster create to node Ready", []).append(time.monotonic() - started)
            try:
                kube_ops(handle, results)
            finally:
                results.setdefault("teardown", []).append(timed(provider.down))
    finally:
        release_engine(engine, previous)
    return info


def kube_ops(handle, results: dict[str, list[float]]) -> None:
    """Kubelet restart to node Ready and pod create to Running, 3 samples each, on either provider's cluster."""
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
    finally:
        kube.close()


def node_image_builds(version: KubeVersion, cold: bool) -> dict[str, float]:
    """Our node image build: cached (a no-op rebuild: checksums re-verified) and, when asked, into an empty
    image cache (DEVICE_CONFORMANCE_CACHE a new directory; the Kubernetes server binaries given with
    --k8s-bin-dir, Go's build and module caches as they are)."""
    from device_conformance.providers.kind.engine import build_node_image
    from device_conformance.toolchain.binaries import ensure_binaries

    figures = {"node image build, cached": timed(lambda: build_node_image(version, log=lambda _: None))}
    if cold:
        binaries = ensure_binaries(version, progress=lambda _: None)
        with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_COLD_DIR", "/tmp")) as fresh:
            argv = [
                str(Path(sys.executable).with_name("device-conformance")), "cluster", "build-node-image",
                "--provider", "kind", "--k8s-version", str(version), "--k8s-bin-dir", str(binaries.directory),
            ]  # fmt: skip
            env = {**os.environ, "DEVICE_CONFORMANCE_CACHE": fresh}
            started = time.monotonic()
            subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
            figures["node image build, empty image cache (Go caches warm)"] = time.monotonic() - started
    return figures


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
def worker_option(requested: str) -> str:
    """pytest's -n from one --workers entry: a count, or "auto" (what `make e2e` starts here)."""
    requested = requested.strip()
    if requested != "auto" and not requested.isdigit():
        raise SystemExit(f"--workers: {requested!r} is neither a count nor 'auto' (e.g. --workers 1,2,auto)")
    return requested


def workers_started(lines: list[str], requested: str) -> int:
    """How many workers xdist started ("created: 8/8 workers"); the count asked for when it said nothing."""
    for line in lines:
        match = re.search(r"created: (\d+)/\d+ workers", line)
        if match:
            return int(match.group(1))
    return int(requested) if requested.isdigit() else 0


def suite_time(version: KubeVersion, workers: str, marks: str, *, provider: str = "local", keyword: str = "") -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        argv = [
            sys.executable, "-m", "pytest", "suites", "-n", workers, "--dist", "loadgroup",
            "-p", "no:cacheprovider", "-rfE", "--k8s-version", str(version), f"--junitxml={junit}",
            "--provider", provider,
        ]  # fmt: skip
        if marks:
            argv += ["-m", marks]
        if keyword:
            argv += ["-k", keyword]
        started = time.monotonic()
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        wall = time.monotonic() - started
        tests = read_junit(junit) if junit.exists() else {}
    lines = proc.stdout.strip().splitlines()
    return {
        "provider": provider,
        "workers": workers_started(lines, workers),
        "workers_requested": workers,
        "marks": marks,
        "keyword": keyword,
        "wall_s": wall,
        "pytest": pytest_summary(lines),
        "returncode": proc.returncode,
        "tests_s": tests,
        # What failed and why, so a slow or failed run can be judged from the JSON alone.
        "failures": [line for line in lines if line.startswith(("FAILED", "ERROR"))],
        "output_tail": proc.stdout[-6000:] if proc.returncode else "",
    }


def pytest_summary(lines: list[str]) -> str:
    """pytest's summary line ("13 passed in 79.85s"), not what a session prints after it (the kind session
    stops its private dockerd last)."""
    for line in reversed(lines):
        if re.search(r"\d+ (passed|failed|error|errors|skipped|deselected)\b.* in \d", line):
            return line.strip("= ")
    return lines[-1] if lines else ""


def read_junit(path: Path) -> dict[str, dict]:
    tests = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = tag
        tests[f"{case.get('classname')}::{case.get('name')}"] = {"s": float(case.get("time", 0)), "outcome": outcome}
    return tests


# ---- 4. a patched build --------------------------------------------------------------------------------
PATCHED_FILE = "pkg/kubelet/cm/devicemanager/manager.go"
PATCHED_BUILD_TARGET_S = 90.0
_LOG_CALL = re.compile(r'\.Info\("')
_BUILT = re.compile(r"^built .* in (\d+)s$", re.M)
_HASHED = re.compile(r"hash to \w+ \(([\d.]+)s\)")


def patch_one_line(path: Path, token: str) -> str:
    """Put `token` into the first log message of `path` (`logger.V(2).Info("...`): a one-line change that
    recompiles its package and what imports it. A new token each run, so no earlier run's build of the
    changed package is in the Go build cache. Returns the changed line."""
    lines = path.read_text().splitlines(keepends=True)
    for index, line in enumerate(lines):
        if _LOG_CALL.search(line):
            lines[index] = _LOG_CALL.sub(f'.Info("[bench {token}] ', line, count=1)
            path.write_text("".join(lines))
            return lines[index].strip()
    raise SystemExit(f'bench: no log call .Info("...") in {path} to change')


def cli() -> str:
    """Our command, from the bench's virtual environment."""
    return str(Path(sys.executable).with_name("device-conformance"))


def uptime() -> str:
    proc = subprocess.run(["uptime"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() or "load average: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM cleans up as Ctrl-C does


def _stop(proc: subprocess.Popen) -> None:
    """Stop a build we started in its own session as Ctrl-C would (go removes its work directory on SIGINT)."""
    if proc.poll() is not None:
        return
    os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def patched_build(version: KubeVersion, parent: Path | None = None) -> dict:
    """A one-line kubelet change in a fresh tree of `version`, built as K8S_SOURCE builds it; the wall time of
    `device-conformance k8s-source build TREE` against PATCHED_BUILD_TARGET_S.

    The tree and the build's cache entry live in one temporary directory (DEVICE_CONFORMANCE_CACHE points the
    build there: no entry lands in, or is pruned from, the shared cache), removed at the end, on Ctrl-C and on
    SIGTERM too. Go's build cache is the user's (GOCACHE as set): that is what a release build filled."""
    root = Path(
        tempfile.mkdtemp(prefix="dc-bench-patched-", dir=parent or os.environ.get("BENCH_TREE_DIR", "/var/tmp"))
    )
    tree = root / "kubernetes"
    result: dict = {
        "version": str(version),
        "release": binary_source(version),
        "file": PATCHED_FILE,
        "target_s": PATCHED_BUILD_TARGET_S,
        "cores": os.cpu_count(),
        "uptime_before": uptime(),
        "load_before": os.getloadavg(),
    }
    previous = signal.signal(signal.SIGTERM, _interrupt)
    proc: subprocess.Popen | None = None
    try:
        result["get_s"] = timed(lambda: get_tree(version, tree, progress=lambda _: None))
        go, env, packages = go_binary(), build_env(tree), command_packages(COMPONENTS)
        # go list's Stale: packages not in the Go build cache. Before the change, a warm cache leaves only the
        # four main packages (always linked anew); after it, the changed package and its importers join them.
        result["stale_before"] = stale_packages(go, tree, BUILD_FLAGS, packages, env)
        result["changed_line"] = patch_one_line(tree / PATCHED_FILE, f"{time.time_ns():x}")
        result["stale_after"] = stale_packages(go, tree, BUILD_FLAGS, packages, env)
        argv = [cli(), "k8s-source", "build", str(tree)]
        build_env_vars = {**os.environ, "DEVICE_CONFORMANCE_CACHE": str(root / "cache")}
        result["uptime_at_build"] = uptime()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        proc = subprocess.Popen(
            argv,
            env=build_env_vars,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        output, _ = proc.communicate()
        result["wall_s"] = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU seconds of the build and every process under it (go, compile, link): what the load does not change.
        result["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        result["returncode"] = proc.returncode
        result["output_tail"] = output[-3000:]
        built, hashed = _BUILT.search(output), _HASHED.search(output)
        result["go_build_s"] = float(built.group(1)) if built else None
        result["hash_s"] = float(hashed.group(1)) if hashed else None
        kubelets = sorted((root / "cache" / "kubernetes").glob(f"{version.tag}-src-*/kubelet"))
        if kubelets:
            said = subprocess.run([kubelets[0], "--version"], capture_output=True, text=True, timeout=60)
            result["kubelet_version"] = said.stdout.strip()
        result["met"] = proc.returncode == 0 and result["wall_s"] <= PATCHED_BUILD_TARGET_S
    finally:
        if proc is not None:
            _stop(proc)
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(root, ignore_errors=True)
        result["uptime_after"] = uptime()
        result["load_after"] = os.getloadavg()
    return result


def patched_build_line(result: dict) -> str:
    """The summary line: the figure against its target, what was compiled, and the machine's load beside it."""
    if "wall_s" not in result:
        return f"patched build of {result['version']}: not measured"
    verdict = "met" if result.get("met") else ("MISSED" if result.get("returncode") == 0 else "FAILED")
    return (
        f"patched build ({result['version']}, one line in {result['file']}, fresh tree): {result['wall_s']:.1f} s "
        f"(target {result['target_s']:.0f} s: {verdict}; go build {result.get('go_build_s')} s; "
        f"{result.get('cpu_s', 0):.0f} CPU s; stale packages "
        f"{result.get('stale_before')} before the change, {result.get('stale_after')} after; {result['cores']} cores; "
        f"as the build started: {result.get('uptime_at_build', result['uptime_before'])})"
    )


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


# (row, local key, kind key): the single operations both providers measure, under their names in the report.
SIDE_BY_SIDE = (
    ("cluster create to node Ready", "bring-up warm", "cluster create to node Ready"),
    ("kubelet restart to node Ready", "kubelet restart to node Ready", "kubelet restart to node Ready"),
    ("pod create to Running", "pod create to Running", "pod create to Running"),
    ("teardown", "teardown", "teardown"),
)


def comparison_rows(report: dict) -> list[tuple[str, float | None, float | None]]:
    """(measurement, local seconds, kind seconds) for the local-vs-kind table; None where not measured.

    Medians of the samples; the node image builds exist on kind only; the last row is CI's kind subset."""
    local, kind = report.get("bring_up", {}), report.get("kind", {})
    kind_ops = kind.get("single", {})

    def median(values: list[float] | None) -> float | None:
        return statistics.median(values) if values else None

    rows = [(name, median(local.get(lk)), median(kind_ops.get(kk))) for name, lk, kk in SIDE_BY_SIDE]
    rows += [(name, None, seconds) for name, seconds in kind.get("node_image", {}).items()]
    subset = {run["provider"]: run["wall_s"] for run in kind.get("suite", [])}
    if subset:
        workers = kind["suite"][0]["workers"]
        rows.append((f"CI kind subset, {workers} workers (suite wall)", subset.get("local"), subset.get("kind")))
    return rows


def comparison_table(rows: list[tuple[str, float | None, float | None]]) -> str:
    """Markdown: one row per measurement, the kind/local ratio where both exist."""

    def cell(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} s"

    lines = ["| measurement (median) | local | kind | kind / local |", "|---|---|---|---|"]
    for name, local, kind in rows:
        ratio = f"{kind / local:.1f}" if local and kind is not None else "-"
        lines.append(f"| {name} | {cell(local)} | {cell(kind)} | {ratio} |")
    return "\n".join(lines)


def print_report(report: dict) -> None:
    if report.get("bring_up"):
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
    if "patched_build" in report:
        print(patched_build_line(report["patched_build"]))
    if "kind" in report:
        print(f"\nlocal vs kind ({report['kind']['engine']['engine']}):")
        print(comparison_table(comparison_rows(report)))
        for run in report["kind"].get("suite", []):
            print(f"CI kind subset on {run['provider']}: {run['wall_s']:.1f} s wall ({run['pytest']})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--k8s-version", help=KNOBS["k8s_version"].help_text())
    parser.add_argument("--provider", choices=("local", "kind"), default="local", help="kind: add kind figures")
    parser.add_argument("--repeats", type=int, default=2, help="bring-up rounds (the first with a cold image cache)")
    parser.add_argument("--samples", type=int, help="samples of each wait (default 3; 0 with --provider kind)")
    parser.add_argument("--skip-suite", action="store_true", help="leave out the suite wall times (a quick run)")
    parser.add_argument(
        "--workers",
        help="worker counts to time the suite at, 'auto' for -n auto's (default 1,2,3,auto; none with kind)",
    )
    parser.add_argument("--marks", default=CI_SUBSET, help="the suite's -m expression ('' for every test)")
    parser.add_argument("--kind-repeats", type=int, default=1, help="kind clusters created (one after another)")
    parser.add_argument("--kind-workers", type=int, default=2, help="workers for CI's kind subset on both providers")
    parser.add_argument(
        "--kind-cold-image", action="store_true", help="also build our node image into an empty image cache"
    )
    parser.add_argument("--skip-patched-build", action="store_true", help="leave out part 4, the patched build")
    parser.add_argument(
        "--only", choices=("patched-build",), help="run one part alone: patched-build (part 4, a few minutes)"
    )
    args = parser.parse_args()
    if args.only == "patched-build":
        args.repeats, args.samples, args.skip_suite, args.provider = 0, 0, True, "local"
    on_kind = args.provider == "kind"
    samples = args.samples if args.samples is not None else (0 if on_kind else 3)
    workers = args.workers if args.workers is not None else ("" if on_kind else "1,2,3,auto")
    version = resolve({"k8s_version": args.k8s_version, "provider": "local"}).k8s_version.value
    report: dict = {
        "k8s_version": str(version),
        "host": f"{os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30} GiB",
        "load_average_at_start": os.getloadavg(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"bench-{time.strftime('%Y%m%dT%H%M%S')}"
    # Written after every part, so a bench stopped half way (they run for an hour) keeps what it measured.
    save = lambda: write_report(report, stem)  # noqa: E731
    if args.repeats:
        report["bring_up"] = bring_up(version, args.repeats)
        save()
    if samples:
        report["waits"] = wait_overheads(version, samples)
        save()
    if not args.skip_suite and workers:
        report["suite"] = []
        for n in workers.split(","):
            report["suite"].append(suite_time(version, worker_option(n), args.marks))
            save()
    if not args.skip_patched_build:
        report["patched_build"] = patched_build(version)
        if not args.only:  # else the summary below is all there is
            print(patched_build_line(report["patched_build"]))
        save()
    if on_kind:
        single: dict[str, list[float]] = {}
        report["kind"] = {"engine": kind_round(version, single, args.kind_repeats), "single": single}
        report["kind"]["node_image"] = node_image_builds(version, args.kind_cold_image)
        save()
        if not args.skip_suite:
            subset = ci_kind_subset()
            report["kind"]["suite"] = []
            for provider in ("local", "kind"):
                report["kind"]["suite"].append(
                    suite_time(version, str(args.kind_workers), "", provider=provider, keyword=subset)
                )
                save()
    report["load_average_at_end"] = os.getloadavg()
    report["complete"] = True
    print_report(report)
    save()
    print(f"wrote {stem}.json" + (f" and {stem}.png" if plotted(report) else ""))


def write_report(report: dict, stem: Path) -> None:
    """The JSON and the PNG of what is measured so far; "complete" is set only once every part ran."""
    report.setdefault("complete", False)
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1))
    if plotted(report):
        plot(report, stem.with_suffix(".png"))


def plotted(report: dict) -> bool:
    """The PNG shows the suite and the waits: a run of the patched build alone has neither."""
    return any(part in report for part in ("bring_up", "waits", "suite"))


if __name__ == "__main__":
    main()
