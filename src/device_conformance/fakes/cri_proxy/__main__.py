"""Run the CRI proxy as its own process:

    python -m device_conformance.fakes.cri_proxy --config FILE [--exit-with-parent PID]

SIGTERM/SIGINT stop it cleanly (server stopped, its socket and control socket removed, exit code 0). It prints
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
from device_conformance.fakes.cri_proxy.config import CRIProxyConfig
from device_conformance.fakes.cri_proxy.proxy import CRIProxy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m device_conformance.fakes.cri_proxy")
    parser.add_argument("--config", required=True, help="JSON file written from CRIProxyConfig")
    parser.add_argument(
        "--exit-with-parent",
        type=int,
        metavar="PID",
        help="exit once our parent is no longer PID, the process that started us, so a crashed test run leaves "
        "no proxy behind",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = CRIProxyConfig.load(args.config)
    except BadInput as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")  # before any socket exists: nothing to clean up
    if not config.control_socket:
        parser.error(f"{args.config}: control_socket is empty")
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    proxy = CRIProxy(config)
    proxy.start()
    control = ControlServer(config.control_socket, proxy.ops())
    control.start()
    print(f"ready {config.control_socket}", flush=True)

    parent = args.exit_with_parent
    while not stop.wait(0.2):
        if parent is not None and os.getppid() != parent:
            logging.warning("parent %d went away; stopping", parent)
            break
    control.stop()
    proxy.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
