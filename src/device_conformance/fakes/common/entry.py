"""The process entry a fake shares: `python -m device_conformance.fakes.<fake> --config FILE [--exit-with-parent PID]`.

It loads the fake's config (a bad one exits 2 before any socket exists), starts the fake, then its control
socket last, so that the `ready <control socket>` line on stdout (what fakes/common/process.py waits for) means
everything the config asked for is up. SIGTERM/SIGINT stop it cleanly: the control socket first, then the fake,
exit code 0. With --exit-with-parent it also stops once the process that started it is gone, so a crashed test
run leaves no fake behind.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Protocol, TypeVar

from device_conformance.core.errors import BadInput
from device_conformance.fakes.common.control import ControlServer, Ops

PARENT_POLL = 0.2  # seconds between checks that the parent is still there


class ControlledFake(Protocol):
    """What the entry needs of a fake: its control operations (`ops`); it is started before it is passed in."""

    def ops(self) -> Ops: ...


class ConfigWithControl(Protocol):
    control_socket: str


ConfigT = TypeVar("ConfigT", bound=ConfigWithControl)


def run_fake(
    prog: str,
    load: Callable[[str], ConfigT],
    start: Callable[[ConfigT], tuple[ControlledFake, Callable[[], None]]],
    argv: list[str] | None = None,
) -> int:
    """Run one fake until it is stopped; `load` reads its config file, `start` starts it and returns it with the
    call that stops it. The exit status."""
    parser = argparse.ArgumentParser(prog=prog)
    parser.add_argument("--config", required=True, help="the fake's JSON config file")
    parser.add_argument(
        "--exit-with-parent",
        type=int,
        metavar="PID",
        help="exit once our parent is no longer PID, the process that started us (at once if it was gone before "
        "we looked), so a crashed test run leaves no fake behind",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = load(args.config)
    except BadInput as exc:
        parser.exit(2, f"{parser.prog}: {exc}\n")  # before any socket exists: nothing to clean up
    if not config.control_socket:
        parser.error(f"{args.config}: control_socket is empty")
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    fake, stop_fake = start(config)
    control = ControlServer(config.control_socket, fake.ops())
    control.start()
    print(f"ready {config.control_socket}", flush=True)

    # The starter's pid comes from it: read here, a parent killed while we started would look like init.
    parent = args.exit_with_parent
    while not stop.wait(PARENT_POLL):
        if parent is not None and os.getppid() != parent:
            logging.warning("parent %d went away; stopping", parent)
            break
    control.stop()
    stop_fake()
    return 0
