"""CDI spec files checked against the CDI specification (cncf-tags/container-device-interface SPEC.md and
its schema/ and pkg/parser rules), written here from the spec: versions, kind, device names, edits.

Also resolving a fully qualified CDI device name (vendor/class=name) in a spec directory, as the container
runtime does when it creates a container.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

# Released spec versions (SPEC.md "Version" and pkg/cdi's validSpecVersions).
CDI_VERSIONS = ("0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0")
# pkg/parser: a vendor is letters, digits, '-', '_', '.', starting with a letter and ending in a letter or
# digit; a class the same without '.'; a device name letters, digits, '-', '_', '.', ':' starting and
# ending with a letter or digit.
VENDOR = re.compile(r"^[A-Za-z]([A-Za-z0-9_.-]*[A-Za-z0-9])?$")
CLASS = re.compile(r"^[A-Za-z]([A-Za-z0-9_-]*[A-Za-z0-9])?$")
DEVICE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
QUALIFIED = re.compile(r"^(?P<kind>[^/=]+/[^/=]+)=(?P<name>.+)$")
EDIT_KEYS = ("env", "deviceNodes", "hooks", "mounts", "intelRdt", "additionalGIDs", "netDevices")


@dataclass
class SpecFile:
    path: Path
    kind: str = ""
    devices: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def valid_kind(kind: str) -> bool:
    vendor, slash, cls = kind.partition("/")
    return bool(slash) and bool(VENDOR.match(vendor)) and bool(CLASS.match(cls))


def parse_qualified(name: str) -> tuple[str, str] | None:
    """(kind, device) of "vendor/class=device", or None when it is not fully qualified."""
    match = QUALIFIED.match(name)
    if not match or not valid_kind(match["kind"]) or not DEVICE.match(match["name"]):
        return None
    return match["kind"], match["name"]


def _edit_problems(edits: Any, where: str) -> list[str]:
    if not isinstance(edits, dict):
        return [f"{where}: containerEdits is not an object"]
    problems = [f"{where}: unknown edit {k!r}" for k in edits if k not in EDIT_KEYS]
    for env in edits.get("env") or []:
        if not isinstance(env, str) or "=" not in env or env.startswith("="):
            problems.append(f"{where}: env {env!r} is not NAME=VALUE")
    for node in edits.get("deviceNodes") or []:
        if not isinstance(node, dict) or not str(node.get("path", "")).startswith("/"):
            problems.append(f"{where}: deviceNode {node!r} has no absolute path")
    for mount in edits.get("mounts") or []:
        if not isinstance(mount, dict) or not mount.get("hostPath") or not mount.get("containerPath"):
            problems.append(f"{where}: mount {mount!r} needs hostPath and containerPath")
    for hook in edits.get("hooks") or []:
        if not isinstance(hook, dict) or not hook.get("hookName") or not str(hook.get("path", "")).startswith("/"):
            problems.append(f"{where}: hook {hook!r} needs hookName and an absolute path")
    return problems


def check_spec(path: Path) -> SpecFile:
    """Parse and check one spec file; SpecFile.problems is empty when it is valid."""
    result = SpecFile(path)
    try:
        data = yaml.safe_load(path.read_text())  # JSON is YAML
    except (OSError, yaml.YAMLError) as exc:
        result.problems.append(f"unreadable: {exc}")
        return result
    if not isinstance(data, dict):
        result.problems.append("not an object")
        return result
    version = data.get("cdiVersion")
    if version not in CDI_VERSIONS:
        result.problems.append(f"cdiVersion {version!r} is not a released CDI version {list(CDI_VERSIONS)}")
    result.kind = str(data.get("kind", ""))
    if not valid_kind(result.kind):
        result.problems.append(f"kind {result.kind!r} is not vendor/class")
    devices = data.get("devices")
    if not isinstance(devices, list) or not devices:
        result.problems.append("devices: a spec needs at least one device")
        devices = []
    for n, device in enumerate(devices):
        name = device.get("name") if isinstance(device, dict) else None
        if not isinstance(name, str) or not DEVICE.match(name):
            result.problems.append(f"devices[{n}]: name {name!r} is not a valid CDI device name")
            continue
        if name in result.devices:
            result.problems.append(f"devices[{n}]: name {name!r} appears twice")
        result.devices.append(name)
        edits = device.get("containerEdits")
        if not edits:
            result.problems.append(f"device {name!r}: containerEdits is empty (a device must edit the container)")
        else:
            result.problems.extend(_edit_problems(edits, f"device {name!r}"))
    if "containerEdits" in data:
        result.problems.extend(_edit_problems(data["containerEdits"], "spec"))
    return result


def spec_files(cdi_dir: Path) -> list[Path]:
    """The files a runtime loads from a CDI directory: *.json and *.yaml, not hidden ones."""
    if not cdi_dir.is_dir():
        return []
    return sorted(
        p for p in cdi_dir.iterdir() if p.suffix in (".json", ".yaml") and not p.name.startswith(".") and p.is_file()
    )


def resolve(cdi_dir: Path, qualified: str) -> list[Path]:
    """The spec files in cdi_dir that define the device `vendor/class=name` (exactly one when all is well)."""
    parsed = parse_qualified(qualified)
    if parsed is None:
        return []
    kind, name = parsed
    return [spec.path for spec in map(check_spec, spec_files(cdi_dir)) if spec.kind == kind and name in spec.devices]


def defined_ids(cdi_dir: Path) -> set[str]:
    """Every fully qualified CDI device name (vendor/class=name) the spec files in cdi_dir define now."""
    return {f"{spec.kind}={name}" for spec in map(check_spec, spec_files(cdi_dir)) for name in spec.devices}
