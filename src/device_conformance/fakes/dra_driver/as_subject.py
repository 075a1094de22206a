"""Our fake DRA driver as a vendor's subject: a command line that vendor mode can start with the node's paths.

    pytest suites/dra --vendor-dra-driver dc-vendor.example.com --vendor-command \
      "python -m device_conformance.fakes.dra_driver.as_subject --driver {driver} --node-name {node_name} \
       --registry-dir {registry_dir} --plugins-dir {plugins_dir} --cdi-dir {cdi_dir} --kubeconfig {kubeconfig} \
       --defect prepare-rejects-repeat"

writes a DriverConfig (devices dev-0..dev-N-1, the kubelet's endpoint at the node's
/var/lib/kubelet/plugins/<driver>/dra.sock, its prepared claims kept in plugins/<driver>/state.json like a real
driver's checkpoint, so they survive a SIGKILL) and runs the fake in this process. A run with a `--defect`
(config.DEFECTS) shows which black-box tests catch that defective vendor, one without shows the clean fake passes.
Its config, control socket and call log live in /tmp/dc-subj-<pid>-XXXXXXXX (short: sun_path holds 107 bytes),
removed at exit and, after a SIGKILL, by the next start (fakes/common/work_dir.py).
"""

from __future__ import annotations

import argparse
import os
import sys

from device_conformance.fakes.common.work_dir import work_dir
from device_conformance.fakes.dra_driver import __main__ as fake_main
from device_conformance.fakes.dra_driver.config import DEFECTS, PATTERNS, DeviceSpec, DriverConfig

KUBELET_PLUGINS_DIR = "/var/lib/kubelet/plugins"  # the node's path, as the kubelet dials it
WORK_PREFIX = "dc-subj-"  # the work folder: /tmp/dc-subj-<pid>-XXXXXXXX (fakes/common/work_dir.py)


def config_from(args: argparse.Namespace, workdir: str) -> DriverConfig:
    data_dir = os.path.join(args.plugins_dir, args.driver)
    os.makedirs(data_dir, exist_ok=True)
    return DriverConfig(
        driver_name=args.driver,
        node_name=args.node_name,
        registry_dir=args.registry_dir,
        plugin_dir=data_dir,
        kubelet_endpoint_path=f"{KUBELET_PLUGINS_DIR}/{args.driver}/dra.sock",
        devices=[DeviceSpec(f"dev-{i}") for i in range(args.devices)],
        kubeconfig=args.kubeconfig,
        resource_api_version=args.resource_api,
        cdi_dir=args.cdi_dir,
        control_socket=os.path.join(workdir, "ctl"),
        call_log=os.path.join(workdir, "calls.jsonl"),
        state_file=os.path.join(data_dir, "state.json"),
        defects=list(args.defect),
        patterns=list(args.pattern),
        health_service=args.health_service,
        initial_health="Healthy" if args.health_service else "",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m device_conformance.fakes.dra_driver.as_subject")
    parser.add_argument("--driver", required=True)
    parser.add_argument("--node-name", required=True)
    parser.add_argument("--registry-dir", required=True, help="host path of the node's plugins_registry")
    parser.add_argument("--plugins-dir", required=True, help="host path of the node's /var/lib/kubelet/plugins")
    parser.add_argument("--cdi-dir", required=True, help="host path of the node's /var/run/cdi")
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--resource-api", default="resource.k8s.io/v1")
    parser.add_argument("--devices", type=int, default=2)
    parser.add_argument("--defect", action="append", default=[], choices=DEFECTS)
    parser.add_argument("--pattern", action="append", default=[], choices=PATTERNS)
    parser.add_argument(
        "--health-service",
        action="store_true",
        help="serve DRAResourceHealth v1 and v1alpha1, every device Healthy from the first report on (the "
        "kubeletplugin helper's defaults from v0.37)",
    )
    args = parser.parse_args(argv)
    with work_dir(WORK_PREFIX) as workdir:  # the control socket's path must fit sun_path
        path = workdir / "config.json"
        path.write_text(config_from(args, str(workdir)).to_json())
        return fake_main.main(["--config", str(path)])


if __name__ == "__main__":
    sys.exit(main())
