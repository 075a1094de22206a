"""A fake Kubernetes device plugin (API v1beta1) that runs as its own process and obeys a control socket.

Tests use DevicePluginHandle.start(config, workdir); see handle.py for its verbs and fakes/common for
what it shares with the fake DRA driver (calls, faults, waits).
"""

from device_conformance.fakes.device_plugin.config import (
    HEALTHY,
    RESPONSE_FIELDS,
    UNHEALTHY,
    AllocateConfig,
    DeviceConfig,
    DevicePluginConfig,
    DeviceSpecConfig,
    MountConfig,
    OptionsConfig,
    cdi_env,
)
from device_conformance.fakes.device_plugin.handle import DevicePluginHandle, plugin_argv

__all__ = [
    "HEALTHY",
    "RESPONSE_FIELDS",
    "UNHEALTHY",
    "AllocateConfig",
    "DeviceConfig",
    "DevicePluginConfig",
    "DevicePluginHandle",
    "DeviceSpecConfig",
    "MountConfig",
    "OptionsConfig",
    "cdi_env",
    "plugin_argv",
]
