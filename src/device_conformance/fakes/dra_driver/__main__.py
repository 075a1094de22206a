"""`python -m device_conformance.fakes.dra_driver --config FILE`: run the fake DRA driver until SIGTERM."""

from __future__ import annotations

import argparse
import signal
import sys

from device_conformance.errors import BadInput
from device_conformance.fakes.common.control import ControlServer
from device_conformance.fakes.dra_driver.config import DriverConfig
from device_conformance.fakes.dra_driver.driver import Driver

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}


def main(argv: list[str] | None = None) -> int:
    # Blocked before any thread exists, so every thread inherits the mask and sigwait() below gets
    # the signal at once (no polling, no handler racing the gRPC threads).
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    parser = argparse.ArgumentParser(prog="python -m device_conformance.fakes.dra_driver")
    parser.add_argument("--config", required=True, help="JSON file with a DriverConfig")
    args = parser.parse_args(argv)
    try:
        config = DriverConfig.load(args.config)
    except BadInput as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")  # before any socket exists: nothing to clean up

    driver = Driver(config)
    driver.start()
    # The control socket comes last: once it answers, everything the config asked for is up.
    control = ControlServer(config.control_socket, driver.ops())
    control.start()
    print(f"fake DRA driver {config.driver_name} ready: {driver.status()}", flush=True)
    try:
        sig = signal.sigwait(STOP_SIGNALS)
        print(f"fake DRA driver got {signal.Signals(sig).name}, stopping", flush=True)
    finally:
        control.stop()
        driver.shutdown()
        print("fake DRA driver stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
