"""Fixtures for the fake device plugin tests: a kubelet stub and real plugin processes, all on short
Unix socket paths (sun_path holds 107 bytes; pytest's tmp_path can be longer)."""

import dataclasses
import shutil
import tempfile
from pathlib import Path

import pytest

from device_conformance.fakes.device_plugin import DeviceConfig, DevicePluginConfig, DevicePluginHandle
from device_conformance.fakes.kubelet_stub import KubeletStub

RESOURCE = "example.com/dev"


@pytest.fixture
def plugin_dirs():
    root = Path(tempfile.mkdtemp(prefix="dpt-", dir="/tmp"))
    (root / "dp").mkdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def kubelet_stub(plugin_dirs):
    stub = KubeletStub(str(plugin_dirs / "dp"), dial_timeout=3.0)
    stub.start()
    yield stub
    stub.stop()


@pytest.fixture
def start_plugin(plugin_dirs):
    """start_plugin(**config_fields) -> a running DevicePluginHandle; all are cleaned up after the test."""
    handles = []

    def start(workdir=None, **overrides):
        config = DevicePluginConfig(
            resource_name=RESOURCE,
            socket_dir=str(plugin_dirs / "dp"),
            socket_name="fake.sock",
            devices=[DeviceConfig("dev-1"), DeviceConfig("dev-2")],
        )
        handle = DevicePluginHandle.start(dataclasses.replace(config, **overrides), workdir or plugin_dirs / "work")
        handles.append(handle)
        return handle

    yield start
    for handle in handles:
        handle.cleanup()
