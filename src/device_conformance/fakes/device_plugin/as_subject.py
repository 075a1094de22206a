"""Run the fake device plugin as a vendor's subject would run, configured by flags instead of a config file:

    python -m device_conformance.fakes.device_plugin.as_subject --socket-dir DIR --resource NAME \\
        [--devices dev-0,dev-1] [--defect NAME ...] [--no-reregister]

so that vendor mode can take our fake, clean or with a defect, as its subject and be seen to fail exactly the
black-box tests the defect breaks:

    pytest suites/device_plugin --vendor-device-plugin example.com/dev \\
        --vendor-command "$PWD/.venv/bin/python -m device_conformance.fakes.device_plugin.as_subject \\
            --socket-dir {plugin_dir} --resource {resource} --defect unstable-device-ids"

Allocate answers with DC_DEVICES=<the IDs> (fixtures/device_plugins.py DEVICES_ENV), as the suites' registered
fake does. The config and the control socket live in a work folder /tmp/dcv-<pid>-XXXXXXXX (short: sun_path holds
107 bytes) removed at exit. A SIGKILLed process runs no `finally`, so the folder holds owner.lock, flock()ed by its
process for as long as it lives (the kernel drops the lock however the process ends, in any pid namespace, and a
reused pid cannot hold it); each start removes the folders whose lock it can take (fakes/common/work_dir.py, shared
with the fake DRA driver's as_subject).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from device_conformance.fakes.common.work_dir import work_dir
from device_conformance.fakes.device_plugin.config import (
    DEFECTS,
    LONG_SOCKET_NAME,
    PATTERNS,
    AllocateConfig,
    DeviceConfig,
    DevicePluginConfig,
)

DEVICES_ENV = "DC_DEVICES"
WORK_PREFIX = "dcv-"  # the work folder: /tmp/dcv-<pid>-XXXXXXXX (fakes/common/work_dir.py)


def socket_name(patterns: list[str]) -> str:
    """dc-vendor-<pid>.sock, or with the long-socket-name pattern one of LONG_SOCKET_NAME characters."""
    if "long-socket-name" not in patterns:
        return f"dc-vendor-{os.getpid()}.sock"
    stem = f"dc-vendor-long-socket-name-{os.getpid()}-"
    return stem.ljust(LONG_SOCKET_NAME - len(".sock"), "x") + ".sock"


def config_from(argv: list[str] | None, workdir: Path) -> DevicePluginConfig:
    parser = argparse.ArgumentParser(prog="python -m device_conformance.fakes.device_plugin.as_subject")
    parser.add_argument("--socket-dir", required=True, help="the kubelet's device-plugin directory")
    parser.add_argument("--resource", required=True, help="the extended resource name it registers")
    parser.add_argument("--devices", default="dev-0,dev-1", help="comma-separated device IDs (default dev-0,dev-1)")
    parser.add_argument("--defect", action="append", default=[], choices=DEFECTS, help="a defective-vendor mode")
    parser.add_argument("--pattern", action="append", default=[], choices=PATTERNS, help="a real-world pattern")
    parser.add_argument(
        "--env-name", default=DEVICES_ENV, help=f"the Allocate env's name (default {DEVICES_ENV}; any the API allows)"
    )
    parser.add_argument(
        "--no-reregister", action="store_true", help="never register again after a kubelet restart (a defect)"
    )
    args = parser.parse_args(argv)
    return DevicePluginConfig(
        resource_name=args.resource,
        socket_dir=args.socket_dir,
        socket_name=socket_name(args.pattern),
        devices=[DeviceConfig(d) for d in args.devices.split(",") if d],
        allocate=AllocateConfig(envs={args.env_name: "{ids}"}),
        control_socket=str(workdir / "ctl.sock"),
        defects=list(args.defect),
        patterns=list(args.pattern),
        auto_reregister=not args.no_reregister,
    )


def main(argv: list[str] | None = None) -> int:
    from device_conformance.fakes.device_plugin.__main__ import main as run

    with work_dir(WORK_PREFIX) as workdir:
        config = config_from(argv, workdir)
        config.save(workdir / "config.json")
        return run(["--config", str(workdir / "config.json")])


if __name__ == "__main__":
    sys.exit(main())
