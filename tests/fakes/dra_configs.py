"""The fake DRA driver's configuration most of its own tests use: driver dra.example.com on node-1 with devices
dev-0 and dev-1, its sockets under `sockets` (a short /tmp directory: tmp_path can exceed sun_path's 107 bytes)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from device_conformance.fakes.dra_driver import DeviceSpec, DriverConfig


def two_device_config(sockets: str, tmp_path: Path, **overrides: Any) -> DriverConfig:
    fields: dict[str, Any] = {
        "driver_name": "dra.example.com",
        "node_name": "node-1",
        "registry_dir": f"{sockets}/registry",
        "plugin_dir": f"{sockets}/plugins",
        "cdi_dir": str(tmp_path / "cdi"),
        "devices": [DeviceSpec("dev-0"), DeviceSpec("dev-1")],
    }
    return DriverConfig(**{**fields, **overrides})
