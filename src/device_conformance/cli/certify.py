"""`device-conformance certify device-plugin|dra-driver`: certify a vendor's device plugin or DRA driver
without a cluster (the tool plays the kubelet) and write a report folder.

Exit status: 0 when no clause FAILed, 1 when one did, 2 for bad input.

`--out` starts clean: what an earlier certify run wrote there (report files, subject-* folders with the
subject's log) is removed before the run; a folder holding anything else is refused (report.clean_report_dir).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from contextlib import nullcontext
from pathlib import Path

from device_conformance.certify import limits, report_text, summary
from device_conformance.certify.report import SUBJECT_DIR_PREFIX, clean_report_dir, write_report
from device_conformance.certify.report_markdown import summary_table
from device_conformance.certify.verdicts import Certification
from device_conformance.expectations.versions import DEFAULT_K8S_VERSION, KubeVersion

DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
PLUGINS_REGISTRY = "/var/lib/kubelet/plugins_registry"


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--command",
        help="start the subject with this shell command (after the tool serves the kubelet side); it is stopped "
        "afterwards. Without it, start the subject yourself: restart clauses are then NOT APPLICABLE",
    )
    parser.add_argument(
        "--out",
        default="certification",
        help="report folder (default ./certification); an earlier run's report there is replaced, a folder "
        "holding anything else is refused",
    )
    parser.add_argument("--subject-name", default="", help="the subject's name for the report")
    parser.add_argument("--subject-version", default="", help="the subject's version for the report")


def register(subparsers: argparse._SubParsersAction) -> None:
    certify = subparsers.add_parser(
        "certify", help="certify a vendor's device plugin or DRA driver: the tool plays the kubelet, writes a report"
    )
    kinds = certify.add_subparsers(dest="certify_kind", required=True)
    dp = kinds.add_parser("device-plugin", help="serve kubelet.sock and check a device plugin clause by clause")
    dp.add_argument("--socket-dir", default=DEVICE_PLUGIN_DIR, help=f"device plugin directory ({DEVICE_PLUGIN_DIR})")
    dp.add_argument("--resource", help="the extended resource name the plugin must register")
    dp.add_argument(
        "--reregister-timeout",
        type=float,
        default=limits.REREGISTER_TIMEOUT,
        help=f"seconds to wait for re-registration after kubelet.sock is re-created ({limits.REREGISTER_TIMEOUT:.0f})",
    )
    _common(dp)
    dp.set_defaults(func=_device_plugin)
    dra = kinds.add_parser("dra-driver", help="watch plugins_registry and check a DRA kubelet plugin clause by clause")
    dra.add_argument(
        "--registry-dir", default=PLUGINS_REGISTRY, help=f"plugins_registry directory ({PLUGINS_REGISTRY})"
    )
    dra.add_argument("--driver", required=True, help="the DRA driver name, e.g. gpu.example.com")
    dra.add_argument(
        "--claims",
        help="JSON/YAML list of {namespace, name, uid[, devices]}, or ResourceClaim objects of resource.k8s.io v1, "
        "v1beta2 or v1beta1 (as kubectl get -o yaml prints them): claims allocated to this driver and node that the "
        "driver can prepare (two for every clause; `devices`: the allocated device names, checked on prepare); or "
        "`auto` (needs "
        "--kubeconfig and --node): once the driver serves, the tool makes two claims itself from the driver's "
        "ResourceSlices for the node, allocated and reserved as the scheduler does, in a namespace of its own "
        "deleted afterwards (for drivers whose device names are generated at start-up; a file named auto: ./auto); "
        "without --claims the prepare clauses are NOT APPLICABLE",
    )
    dra.add_argument("--cdi-dir", default="/var/run/cdi", help="where the driver writes CDI specs (/var/run/cdi)")
    dra.add_argument(
        "--kubeconfig", help="an API server to read the driver's ResourceSlices (and --claims) from, or make claims in"
    )
    dra.add_argument("--node", help="the node the driver runs for (ResourceSlices, --claims auto)")
    _common(dra)
    dra.set_defaults(func=_dra_driver)
    sample = kinds.add_parser(
        "sample-device-plugin",
        help="build upstream's sample device plugin from the Go module of a Kubernetes version and certify it "
        "(root: it runs in a private mount namespace)",
    )
    sample.add_argument("--k8s-version", default=str(DEFAULT_K8S_VERSION), help="Kubernetes version (module tag)")
    sample.add_argument("--out", default="certification-sample-device-plugin", help="report folder")
    sample.set_defaults(func=_sample_device_plugin)
    test_driver = kinds.add_parser(
        "dra-test-driver",
        help="build upstream's DRA test driver (kubelet-plugin) from the Go module of a Kubernetes version and "
        "certify it against a local cluster holding claims allocated to its node (root, `make setup`)",
    )
    test_driver.add_argument("--k8s-version", default=str(DEFAULT_K8S_VERSION), help="Kubernetes version (module tag)")
    test_driver.add_argument("--out", default="certification-dra-test-driver", help="report folder")
    test_driver.add_argument(
        "--no-cluster",
        action="store_true",
        help="bring up no local cluster: the driver gets an API server that leads nowhere, so the claim clauses "
        "and DRA-SLICES are NOT APPLICABLE (for machines without the local provider)",
    )
    test_driver.set_defaults(func=_dra_test_driver)
    kinds.add_parser("clauses", help="print the clause catalogue (Markdown)").set_defaults(func=_clauses)
    summary = kinds.add_parser(
        "summary", help="one table over report folders (a run's --out or --vendor-report, or a folder of them)"
    )
    summary.add_argument("folders", nargs="+", type=Path, help="report folders, or folders holding report folders")
    summary.set_defaults(func=_summary)


def _summary(args: argparse.Namespace) -> int:
    """Exit 1 when any report FAILED, so CI goes red on a finding."""
    rows = [row for folder in args.folders for row in summary.read_reports(folder)]
    print(summary.render(rows))
    return 0 if all(row.passed for row in rows) else 1


def _quiet_grpc() -> None:
    """gRPC core logs every GOAWAY of a subject restarting at INFO; the report holds what matters. Effective
    only before grpc is first imported, which the verbs below do lazily."""
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def _finish(cert: Certification, out: str) -> int:
    paths = write_report(cert, Path(out))
    print(report_text.ran_line(cert))
    for result in report_text.failed(cert):
        print(f"FAIL {report_text.fail_line(result)}")
    print(summary_table(cert))
    print(f"\n{'PASSED' if cert.passed else 'FAILED'}: {cert.counts()}; report in {paths['report.html'].parent}/")
    return 0 if cert.passed else 1


def _workdir(out: str) -> Path:
    """The subject's work folder (its log) in a clean report folder."""
    clean_report_dir(Path(out))
    return Path(tempfile.mkdtemp(prefix=SUBJECT_DIR_PREFIX, dir=out))


def _device_plugin(args: argparse.Namespace) -> int:
    _quiet_grpc()
    from device_conformance.certify.device_plugin import DevicePluginTarget, certify_device_plugin

    target = DevicePluginTarget(
        socket_dir=args.socket_dir,
        resource=args.resource,
        command=args.command,
        name=args.subject_name,
        version=args.subject_version,
        workdir=_workdir(args.out),
        reregister_timeout=args.reregister_timeout,
    )
    print(f"certifying the device plugin in {args.socket_dir} ...", file=sys.stderr)
    return _finish(certify_device_plugin(target), args.out)


def _log(line: str) -> None:
    print(line, file=sys.stderr)


def _dra_driver(args: argparse.Namespace) -> int:
    _quiet_grpc()
    from device_conformance.certify import dra_auto_claims
    from device_conformance.certify.dra_driver import DraDriverTarget, certify_dra_driver, load_claims

    auto = args.claims == dra_auto_claims.AUTO
    claims, allocated = load_claims(args.claims, args.driver, args.node) if args.claims and not auto else ([], {})
    # --claims auto: the API server is checked before anything starts; what the run makes is deleted on leaving.
    session = dra_auto_claims.session(args.kubeconfig, args.driver, args.node, log=_log) if auto else nullcontext()
    with session as maker:
        target = DraDriverTarget(
            registry_dir=args.registry_dir,
            driver=args.driver,
            command=args.command,
            claims=claims,
            allocated=allocated,
            cdi_dir=args.cdi_dir,
            kubeconfig=args.kubeconfig,
            node_name=args.node,
            make_claims=maker.make if maker else None,
            name=args.subject_name,
            version=args.subject_version,
            workdir=_workdir(args.out),
        )
        print(f"certifying DRA driver {args.driver} through {args.registry_dir} ...", file=sys.stderr)
        return _finish(certify_dra_driver(target), args.out)


def _sample_device_plugin(args: argparse.Namespace) -> int:
    _quiet_grpc()
    from device_conformance.certify import upstream
    from device_conformance.certify.device_plugin import DevicePluginTarget, certify_device_plugin

    version = KubeVersion.parse(args.k8s_version)
    workdir = _workdir(args.out)  # a refused --out is known before minutes of building
    binary = upstream.build_sample_device_plugin(version, lambda line: print(line, file=sys.stderr))
    kubelet_root = Path(tempfile.mkdtemp(prefix="kubelet-", dir="/tmp"))  # short: sockets live there
    (kubelet_root / "device-plugins").mkdir()
    try:
        target = DevicePluginTarget(
            socket_dir=str(kubelet_root / "device-plugins"),
            resource=upstream.SAMPLE_RESOURCE,
            command=upstream.sample_device_plugin_command(binary, kubelet_root),
            name=f"upstream sample-device-plugin ({upstream.SAMPLE_DEVICE_PLUGIN})",
            version=version.tag,
            workdir=workdir,
        )
        return _finish(certify_device_plugin(target), args.out)
    finally:
        shutil.rmtree(kubelet_root, ignore_errors=True)


def _clauses(_: argparse.Namespace) -> int:
    from device_conformance.certify.clauses import markdown

    sys.stdout.write(markdown())
    return 0


def _dra_test_driver(args: argparse.Namespace) -> int:
    _quiet_grpc()
    from device_conformance.certify import dra_auto_claims, upstream, upstream_cluster
    from device_conformance.certify.dra_driver import DraDriverTarget, certify_dra_driver

    version = KubeVersion.parse(args.k8s_version)
    workdir = _workdir(args.out)  # a refused --out is known before minutes of building
    binary = upstream.build_dra_test_driver(version, _log)
    root = Path(tempfile.mkdtemp(prefix="dra-", dir="/tmp"))  # short: sockets live there
    driver = upstream.DRA_TEST_DRIVER_NAME
    try:
        # A local cluster; the claims are made as `--claims auto` makes them, from the slices the driver publishes
        # once it serves (the kubeletplugin helper reads every claim it prepares from the API server).
        with upstream_cluster.api_server(version, cluster=not args.no_cluster, log=_log) as api:
            claims = (
                dra_auto_claims.session(api.kubeconfig, driver, api.node_name, log=_log) if api.kubeconfig else None
            )
            with claims or nullcontext() as maker:
                target = DraDriverTarget(
                    registry_dir=str(root / "registry"),
                    driver=driver,
                    command=upstream.dra_test_driver_command(binary, root, api.kubeconfig, api.node_name),
                    make_claims=maker.make if maker else None,
                    cdi_dir=str(root / "cdi"),
                    kubeconfig=str(api.kubeconfig) if api.kubeconfig else None,
                    node_name=api.node_name,
                    name=f"upstream DRA test driver kubelet-plugin ({upstream.DRA_TEST_DRIVER})",
                    version=version.tag,
                    workdir=workdir,
                )
                return _finish(certify_dra_driver(target), args.out)
    finally:
        shutil.rmtree(root, ignore_errors=True)
