"""Run the suites with `--provider existing` against a kind cluster standing in for a user's cluster (
the node agent, "tested against a kind cluster used as existing").

It brings up a kind cluster with the kind provider (a private dockerd where no engine answers), loads the node
agent's image into it as a user would (`kind load image-archive`), optionally deploys upstream's sample device
plugin (`--sample-device-plugin`) or DRA test driver (`--dra-test-driver`, with its ServiceAccount and RBAC) as the
vendor's DaemonSet, then runs

    pytest <args> --provider existing --kubeconfig K --allow-node-disruption <the node>

in a subprocess, and deletes everything it made (cluster, engine) at the end, also after Ctrl-C or SIGTERM.
The pytest session itself removes its node agents. Needs root (the private dockerd).

    .venv/bin/python bench/existing_on_kind.py [--sample-device-plugin | --dra-test-driver] [--no-allow] \
        -- suites -m smoke
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion
from device_conformance.host.dockercli import Docker
from device_conformance.kube.client import Kube
from device_conformance.providers.agent.image import agent_image
from device_conformance.providers.kind.engine import ensure_engine, ensure_node_image, release_engine
from device_conformance.providers.kind.provider import KindProvider
from device_conformance.toolchain.cache import cache_root

ROOT = Path(__file__).resolve().parents[1]


def log(message: str) -> None:
    print(f"[existing-on-kind] {message}", flush=True)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def deploy_upstream_subject(
    short_name: str, provider: KindProvider, cluster: str, kubeconfig: Path, version: KubeVersion
) -> str:
    """Upstream's sample device plugin or DRA test driver as the repository's manifest (the DaemonSet, and the
    driver's ServiceAccount and ClusterRole(Binding)): the vendor's own deployment, as far as the suite is
    concerned. Returns its NAMESPACE/NAME. The cluster's deletion takes it along."""
    from device_conformance.certify.upstream import build_dra_test_driver, build_sample_device_plugin
    from device_conformance.kube.manifests import apply_manifest, manifest_objects
    from device_conformance.toolchain.images.build import subject_image
    from device_conformance.vendor.spec import UPSTREAM_DAEMONSETS

    build = build_sample_device_plugin if short_name == "sample-device-plugin" else build_dra_test_driver
    binary = build(version, log)
    image = subject_image(
        binary, f"device-conformance.local/{short_name}:v{version}", cache_root() / "images" / "subjects"
    )
    assert provider.cli is not None
    provider.cli.load_image_archive(cluster, image.tarball)
    manifest = ROOT / f"src/device_conformance/vendor/manifests/{short_name}.yaml"
    kube = Kube.from_kubeconfig(kubeconfig)
    try:
        for applied in apply_manifest(kube.api_client, manifest_objects(manifest.read_text(), image.name)):
            log(f"applied {applied}")
    finally:
        kube.close()
    return "/".join(UPSTREAM_DAEMONSETS[short_name])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--k8s-version", default=str(DEFAULT_K8S_VERSION))
    parser.add_argument("--sample-device-plugin", action="store_true", help="deploy upstream's sample device plugin")
    parser.add_argument(
        "--dra-test-driver", action="store_true", help="deploy upstream's DRA test driver's kubelet plugin"
    )
    parser.add_argument("--kind-profile", default=None, help="kind-configs/ profile (default single-node)")
    parser.add_argument(
        "--node",
        type=int,
        default=0,
        help="index of the node to allow, in the kind provider's order (workers first, then the control plane)",
    )
    parser.add_argument("--no-allow", action="store_true", help="run without --allow-node-disruption")
    parser.add_argument(
        "--extra-run",
        action="append",
        default=[],
        metavar="ARGS",
        help="pytest arguments of a run before the main one, on the same cluster ({node}: the node's name; no "
        "--allow-node-disruption added); its exit code is printed, not judged",
    )
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()
    version = KubeVersion.parse(args.k8s_version)
    signal.signal(signal.SIGTERM, _interrupt)
    previous_host = os.environ.get("DOCKER_HOST")
    engine = ensure_engine(log=log)
    provider = None
    try:
        image = ensure_node_image(Docker(), version, os.environ.get("KIND_NODE_IMAGE") or f"kindest/node:v{version}",
                                  ours=True, log=log)  # fmt: skip
        provider = KindProvider(version, image=image, profile=args.kind_profile, artifacts=ROOT / "artifacts", log=log)
        provider.prepare()
        handle = provider.up()
        cluster = handle.name
        node = handle.nodes[args.node].name
        log(f"the cluster's nodes: {', '.join(n.name for n in handle.nodes)}; the suite may disturb {node} only")
        agent = agent_image(cache_root() / "images" / "node-agent")
        assert provider.cli is not None
        log(f"loading the node agent's image {agent.name} as a user would: kind load image-archive {agent.tarball}")
        provider.cli.load_image_archive(cluster, agent.tarball)
        extra = []
        if args.sample_device_plugin:
            daemonset = deploy_upstream_subject("sample-device-plugin", provider, cluster, handle.kubeconfig, version)
            extra = ["--vendor-device-plugin", "example.com/resource", "--vendor-daemonset", daemonset]
        elif args.dra_test_driver:
            daemonset = deploy_upstream_subject("dra-test-driver", provider, cluster, handle.kubeconfig, version)
            extra = ["--vendor-dra-driver", "test-driver.cdi.k8s.io", "--vendor-daemonset", daemonset]
        allow = [] if args.no_allow else ["--allow-node-disruption", node]
        argv = [
            sys.executable, "-m", "pytest", *args.pytest_args, "-p", "no:cacheprovider",
            "--provider", "existing", "--kubeconfig", str(handle.kubeconfig), *allow, *extra,
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in ("PROVIDER", "KIND_CLUSTER", "DOCKER_HOST")}
        for extra_run in args.extra_run:
            extra_argv = [
                sys.executable, "-m", "pytest", *shlex.split(extra_run.replace("{node}", node)), "-p",
                "no:cacheprovider", "--provider", "existing", "--kubeconfig", str(handle.kubeconfig),
            ]  # fmt: skip
            log("extra run: " + " ".join(extra_argv))
            code = subprocess.run(extra_argv, cwd=ROOT, env=env, check=False).returncode
            log(f"extra run exited {code}")
        log("running: " + " ".join(argv))
        child = subprocess.Popen(argv, cwd=ROOT, env=env)
        while True:
            try:
                return child.wait()
            except KeyboardInterrupt:
                # Ctrl-C reached pytest too: let it remove its node agents before the cluster goes.
                log("interrupted: waiting for pytest's own teardown (its node agents)")
                child.send_signal(signal.SIGINT)
    finally:
        if provider is not None:
            provider.down()
        release_engine(engine, previous_host)
        log("kind cluster and engine removed")


if __name__ == "__main__":
    sys.exit(main())
