"""Run the fake device plugin as its own process:

    python -m device_conformance.fakes.device_plugin --config FILE [--exit-with-parent PID]

SIGTERM/SIGINT stop it cleanly (servers stopped, its sockets removed, exit code 0). It prints
`ready <control socket>` on stdout once the control socket answers (fakes/common/entry.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from device_conformance.fakes.common.entry import run_fake
from device_conformance.fakes.device_plugin.config import DevicePluginConfig
from device_conformance.fakes.device_plugin.plugin import FakeDevicePlugin


def _start(config: DevicePluginConfig) -> tuple[FakeDevicePlugin, Callable[[], None]]:
    plugin = FakeDevicePlugin(config)
    plugin.start()
    return plugin, plugin.shutdown


def main(argv: list[str] | None = None) -> int:
    return run_fake("python -m device_conformance.fakes.device_plugin", DevicePluginConfig.load, _start, argv)


if __name__ == "__main__":
    sys.exit(main())
