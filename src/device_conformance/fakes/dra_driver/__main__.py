"""`python -m device_conformance.fakes.dra_driver --config FILE [--exit-with-parent]`: run the fake DRA driver
until SIGTERM (or, with --exit-with-parent, until the process that started it is gone)."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.control import ControlServer
from device_conformance.fakes.dra_driver.config import DriverConfig
from device_conformance.fakes.dra_driver.driver import Driver

STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
PARENT_POLL = 0.2  # seconds between checks that the parent is still there


def main(argv: list[str] | None = None) -> int:
    # Blocked before any thread exists, so every thread inherits the mask and sigwait() below gets
    # the signal at once (no polling, no handler racing the gRPC threads).
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    parser = argparse.ArgumentParser(prog="python -m device_conformance.fakes.dra_driver")
    parser.add_argument("--config", required=True, help="JSON file with a DriverConfig")
    parser.add_argument(
        "--exit-with-parent",
        type=int,
        metavar="PID",
        help="exit once our parent is no longer PID, the process that started us (at once if it was gone "
        "before we looked), so a crashed test run leaves no driver behind",
    )
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
    # The starter's pid comes from it: read here, a parent killed while we started would look like init.
    parent = args.exit_with_parent
    try:
        while True:
            info = signal.sigtimedwait(STOP_SIGNALS, PARENT_POLL)
            # A stop and continue (SIGSTOP/SIGCONT: a frozen or CPU-starved process) can wake the wait with a
            # siginfo no signal filled in (seen: si_signo 1253021568): only the signals waited for stop us.
            if info is not None and info.si_signo in STOP_SIGNALS:
                print(f"fake DRA driver got {signal.Signals(info.si_signo).name}, stopping", flush=True)
                break
            if parent is not None and os.getppid() != parent:
                print(f"fake DRA driver: parent {parent} went away, stopping", flush=True)
                break
    finally:
        control.stop()
        driver.shutdown()
        print("fake DRA driver stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
