"""Run the fake device plugin as its own process:

    python -m device_conformance.fakes.device_plugin --config FILE [--exit-with-parent]

SIGTERM/SIGINT stop it cleanly (servers stopped, its sockets removed, exit code 0). It prints
`ready <control socket>` on stdout once the control socket answers.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from types import FrameType

from device_conformance.errors import BadInput
from device_conformance.fakes.common.control import ControlServer
from device_conformance.fakes.device_plugin.config import DevicePluginConfig
from device_conformance.fakes.device_plugin.plugin import FakeDevicePlugin


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m device_conformance.fakes.device_plugin")
    parser.add_argument("--config", required=True, help="JSON file written from DevicePluginConfig")
    parser.add_argument(
        "--exit-with-parent",
        type=int,
        metavar="PID",
        help="exit once our parent is no longer PID, the process that started us (at once if it was gone "
        "before we looked), so a crashed test run leaves no plugin behind",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    try:
        config = DevicePluginConfig.load(args.config)
    except BadInput as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")  # before any socket exists: nothing to clean up
    if not config.control_socket:
        parser.error(f"{args.config}: control_socket is empty")
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    plugin = FakeDevicePlugin(config)
    plugin.start()
    control = ControlServer(config.control_socket, plugin.ops())
    control.start()
    print(f"ready {config.control_socket}", flush=True)

    # The starter's pid comes from it: read here, a parent killed while we started would look like init.
    parent = args.exit_with_parent
    while not stop.wait(0.2):
        if parent is not None and os.getppid() != parent:
            logging.warning("parent %d went away; stopping", parent)
            break
    control.stop()
    plugin.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
