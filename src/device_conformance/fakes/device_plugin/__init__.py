"""A fake Kubernetes device plugin (API v1beta1) that runs as its own process and obeys a control socket.

Tests use DevicePluginHandle.start(config, workdir); see handle.py and client.py for the verbs.
"""

from device_conformance.fakes.device_plugin.calllog import CallRecord, RegistrationRecord, read_call_log
from device_conformance.fakes.device_plugin.client import ControlError, DevicePluginControl
from device_conformance.fakes.device_plugin.config import (
    HEALTHY,
    UNHEALTHY,
    AllocateConfig,
    DeviceConfig,
    DevicePluginConfig,
    DeviceSpecConfig,
    MountConfig,
    OptionsConfig,
)
from device_conformance.fakes.device_plugin.handle import DevicePluginHandle, plugin_argv

__all__ = [
    "HEALTHY",
    "UNHEALTHY",
    "AllocateConfig",
    "CallRecord",
    "ControlError",
    "DeviceConfig",
    "DevicePluginConfig",
    "DevicePluginControl",
    "DevicePluginHandle",
    "DeviceSpecConfig",
    "MountConfig",
    "OptionsConfig",
    "RegistrationRecord",
    "plugin_argv",
    "read_call_log",
]
