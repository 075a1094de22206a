"""Run the CRI proxy as its own process:

    python -m device_conformance.fakes.cri_proxy --config FILE [--exit-with-parent PID]

SIGTERM/SIGINT stop it cleanly (server stopped, its socket and control socket removed, exit code 0). It prints
`ready <control socket>` on stdout once the control socket answers (fakes/common/entry.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from device_conformance.fakes.common.entry import run_fake
from device_conformance.fakes.cri_proxy.config import CRIProxyConfig
from device_conformance.fakes.cri_proxy.proxy import CRIProxy


def _start(config: CRIProxyConfig) -> tuple[CRIProxy, Callable[[], None]]:
    proxy = CRIProxy(config)
    proxy.start()
    return proxy, proxy.stop


def main(argv: list[str] | None = None) -> int:
    return run_fake("python -m device_conformance.fakes.cri_proxy", CRIProxyConfig.load, _start, argv)


if __name__ == "__main__":
    sys.exit(main())
