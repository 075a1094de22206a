"""Run the real certifier against the real fake processes, started by the certifier through --command
(`python -m device_conformance.fakes.<kind> --config FILE`), over real gRPC sockets in short /tmp paths."""

import json
import shlex
import shutil
import sys
import tempfile
from pathlib import Path

from device_conformance.certify.device_plugin import DevicePluginTarget, certify_device_plugin
from device_conformance.certify.dra_driver import DraDriverTarget, RetryClock, certify_dra_driver
from device_conformance.fakes.device_plugin import DeviceConfig, DevicePluginConfig, OptionsConfig
from device_conformance.fakes.dra_driver import DeviceSpec, DriverConfig

RESOURCE = "example.com/dev"
DRIVER = "dra.example.com"
CLAIMS = [("ns-1", "uid-a", "claim-a"), ("ns-1", "uid-b", "claim-b")]
# What the scheduler would have allocated: claim A both devices, claim B one (the fake reads this from its state
# file; the certifier is told through DraDriverTarget.allocated, as --claims' `devices`).
ALLOCATED = {"uid-a": ["dev-0", "dev-1"], "uid-b": ["dev-1"]}
# Long enough for the fake (it re-registers within ~0.2 s) on a loaded 2-core machine; the CLI default is 30 s.
REREGISTER_TIMEOUT = 8.0


def _short_dir(prefix):
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))  # sun_path holds 107 bytes


def fake_command(module, config_path):
    return shlex.join([sys.executable, "-m", f"device_conformance.fakes.{module}", "--config", str(config_path)])


def run_device_plugin(defects=(), **overrides):
    """Certify the fake device plugin (three devices, one with topology, every option on) with `defects`;
    `overrides` are DevicePluginConfig settings (socket_name, patterns, ...)."""
    root = _short_dir("cdp-")
    try:
        (root / "dp").mkdir()
        settings = {
            "socket_name": "fake.sock",
            "resource_name": RESOURCE,
            "devices": [DeviceConfig("dev-1", numa_nodes=[0]), DeviceConfig("dev-2"), DeviceConfig("dev-3")],
            "options": OptionsConfig(pre_start_required=True, get_preferred_allocation_available=True),
            **overrides,
        }
        config = DevicePluginConfig(
            socket_dir=str(root / "dp"),
            control_socket=str(root / "ctl.sock"),
            call_log=str(root / "calls.jsonl"),
            defects=list(defects),
            **settings,
        )
        config.save(root / "config.json")
        target = DevicePluginTarget(
            socket_dir=str(root / "dp"),
            resource=RESOURCE,
            command=fake_command("device_plugin", root / "config.json"),
            name="fake device plugin",
            version="test",
            workdir=root / "work",
            reregister_timeout=REREGISTER_TIMEOUT,
        )
        return certify_device_plugin(target)
    finally:
        shutil.rmtree(root, ignore_errors=True)


class VirtualClock:
    """DraDriverTarget.retry_clock for a driver whose answers do not depend on time: the certifier's pauses
    between calls for a failed claim pass at once, so its whole wait (180 s) costs only the calls."""

    def __init__(self):
        self.time = 0.0

    def now(self):
        return self.time

    def sleep(self, seconds):
        self.time += seconds


def run_dra_driver(defects=(), claims=CLAIMS, patterns=(), make_claims=None, retry_clock=None, health="Healthy"):
    """Certify the fake DRA driver (two devices, claims A and B allocated as ALLOCATED through its state file) with
    `defects` (contract breaches) or `patterns` (behaviours real drivers have that the contract allows);
    `make_claims`: DraDriverTarget.make_claims (--claims auto), given with claims=(); `retry_clock`: a
    VirtualClock, or None for real time. It serves DRAResourceHealth v1 and v1alpha1 as the kubeletplugin helper does
    by default, each stream's first report naming both devices `health` ("": no report until a push; None: no
    health service)."""
    root = _short_dir("cdra-")
    try:
        config = DriverConfig(
            driver_name=DRIVER,
            node_name="node-1",
            registry_dir=str(root / "registry"),
            plugin_dir=str(root / "plugins"),
            cdi_dir=str(root / "cdi"),
            devices=[DeviceSpec("dev-0"), DeviceSpec("dev-1")],
            control_socket=str(root / "ctl.sock"),
            call_log=str(root / "calls.jsonl"),
            state_file=str(root / "state.json"),
            defects=list(defects),
            patterns=list(patterns),
            health_service=health is not None,
            initial_health=health or "",
        )
        allocations = {
            uid: {"namespace": ns, "name": name, "results": [{"device": d, "request": "gpu"} for d in ALLOCATED[uid]]}
            for ns, uid, name in CLAIMS
        }
        (root / "state.json").write_text(json.dumps({"allocations": allocations}))
        (root / "config.json").write_text(config.to_json())
        target = DraDriverTarget(
            registry_dir=str(root / "registry"),
            driver=DRIVER,
            command=fake_command("dra_driver", root / "config.json"),
            claims=list(claims),
            allocated=ALLOCATED,
            cdi_dir=str(root / "cdi"),
            make_claims=make_claims,
            name="fake DRA driver",
            version="test",
            workdir=root / "work",
        )
        if retry_clock is not None:
            target.retry_clock = RetryClock(retry_clock.now, retry_clock.sleep)
        return certify_dra_driver(target)
    finally:
        shutil.rmtree(root, ignore_errors=True)
