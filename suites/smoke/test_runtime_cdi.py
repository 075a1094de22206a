"""Smoke: the container runtime applies CDI specs, which the DRA suites (and CDI device plugins) rely on.

A DRA driver (or a device plugin, KEP-4009) names CDI devices; the runtime resolves them from spec
files under /var/run/cdi and applies their container edits. Debian's containerd 1.6 had no CDI at all.
"""

import json
import uuid

import pytest
from device_conformance.fixtures.reports import attach_on_failure

from device_conformance.framework import SINCE_CDI_DEVICES_IN_ALLOCATE, AllocateConfig

pytestmark = pytest.mark.smoke

CDI_DIR = "/var/run/cdi"
CDI_KIND = "example.com/dev"


def test_runtime_reports_cdi_enabled_on_the_spec_dir(node):
    """The runtime's own effective config (CRI Status, verbose) has CDI on and reads /var/run/cdi."""
    config = node.runtime_info()["config"]
    assert config["enableCDI"] is True, config
    assert CDI_DIR in config["cdiSpecDirs"], config["cdiSpecDirs"]


@pytest.fixture
def cdi_device(node, request):
    """A CDI spec file under the node's /var/run/cdi: one device whose edits set FOO=bar; removed afterwards."""
    name = f"dc-{uuid.uuid4().hex[:8]}"  # unique: two specs with one device name would conflict
    spec = {
        "cdiVersion": "0.6.0",
        "kind": CDI_KIND,
        "devices": [{"name": name, "containerEdits": {"env": ["FOO=bar", f"DC_CDI_DEVICE={name}"]}}],
    }
    path = f"{CDI_DIR}/{name}.json"
    node.write_file(path, json.dumps(spec).encode(), mode=0o644)
    attach_on_failure(request.node, f"CDI spec {path}", lambda: json.dumps(spec, indent=1))
    yield f"{CDI_KIND}={name}"
    node.delete_file(path)


@SINCE_CDI_DEVICES_IN_ALLOCATE
@pytest.mark.scenario("DP2")
def test_cdi_device_edits_reach_the_container(pod_factory, register_plugin, cdi_device):
    """A device plugin answers Allocate with only a CDI device name; the env comes from the spec file."""
    plugin = register_plugin(("dev-0",), allocate=AllocateConfig(cdi_devices=[cdi_device]))
    resource = plugin.config.resource_name
    pod = pod_factory(
        "cdi", ["sh", "-c", 'echo "FOO=$FOO DC_CDI_DEVICE=$DC_CDI_DEVICE"; exec sleep 86400'], resources={resource: 1}
    )
    pod.wait_running()
    allocated = plugin.calls("Allocate")
    assert len(allocated) == 1

    pod.log_line("FOO=")  # waits for the container's one line
    assert pod.logs().strip() == f"FOO=bar DC_CDI_DEVICE={cdi_device.split('=', 1)[1]}"
