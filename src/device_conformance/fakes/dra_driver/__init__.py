"""A fake DRA driver that runs as its own process on the node (so tests can SIGKILL it).

Tests and fixtures use `handle.start(config, workdir)`; the process itself is `__main__.py`.
"""

from device_conformance.fakes.dra_driver.config import DeviceSpec, DriverConfig

__all__ = ["DeviceSpec", "DriverConfig"]
