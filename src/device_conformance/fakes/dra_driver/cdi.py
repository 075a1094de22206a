"""CDI spec files for prepared claims: one file per claim, one CDI device per allocated device."""

from __future__ import annotations

import json
import os
import re
from typing import Any

CDI_VERSION = "0.6.0"


def env_suffix(name: str) -> str:
    """A device or claim name as an env var suffix: upper case, anything else than [A-Z0-9] becomes _."""
    return re.sub(r"[^A-Z0-9]", "_", name.upper())


def cdi_device_name(claim_uid: str, device: str) -> str:
    # CDI device names allow [A-Za-z0-9_.:-]; UIDs and DNS-label device names fit.
    return f"{claim_uid}-{device}"


def qualified_name(kind: str, claim_uid: str, device: str) -> str:
    return f"{kind}={cdi_device_name(claim_uid, device)}"


def device_env(namespace: str, claim_name: str, claim_uid: str, device: str) -> list[str]:
    """What a container sees for one prepared device; suites assert on these names."""
    suffix = env_suffix(device)
    return [f"DRA_DEVICE_{suffix}={namespace}/{claim_name}", f"DRA_CLAIM_UID_{suffix}={claim_uid}"]


def build_spec(kind: str, namespace: str, claim_name: str, claim_uid: str, devices: list[str]) -> dict[str, Any]:
    return {
        "cdiVersion": CDI_VERSION,
        "kind": kind,
        "devices": [
            {
                "name": cdi_device_name(claim_uid, dev),
                "containerEdits": {"env": device_env(namespace, claim_name, claim_uid, dev)},
            }
            for dev in devices
        ],
    }


def spec_path(cdi_dir: str, driver: str, claim_uid: str) -> str:
    return os.path.join(cdi_dir, f"{driver}-{claim_uid}.json")


def write_spec(path: str, spec: dict[str, Any]) -> None:
    """Write atomically: the runtime's CDI cache watches the directory and must never read half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # A leading dot and no .json suffix: CDI caches ignore the temporary file.
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=2)
    os.replace(tmp, path)


def remove_spec(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def static_spec_path(cdi_dir: str, driver: str, name: str) -> str:
    """A spec the driver writes at start-up and keeps (driver-wide or per device), not per claim."""
    return os.path.join(cdi_dir, f"{driver}-static-{name}.json")


def build_static_spec(kind: str, driver: str, name: str) -> dict[str, Any]:
    """One device that is not a claim's: the driver-wide `common` device or a device's own static spec."""
    edits = {"env": [f"DRA_DRIVER_NAME={driver}", f"DRA_STATIC_DEVICE_{env_suffix(name)}={name}"]}
    return {"cdiVersion": CDI_VERSION, "kind": kind, "devices": [{"name": name, "containerEdits": edits}]}


def shared_claims_spec_path(cdi_dir: str, driver: str) -> str:
    """The one spec of every claim that the defect cdi-claim-edits-global writes."""
    return os.path.join(cdi_dir, f"{driver}-claims.json")


def read_spec(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        return None


def with_claim_globally(spec: dict[str, Any] | None, claim_spec: dict[str, Any]) -> dict[str, Any]:
    """cdi-claim-edits-global: `spec` (the shared one, or None) with the devices of `claim_spec` (build_spec) added,
    their env lines in the spec-level containerEdits as well."""
    merged = spec or {"cdiVersion": claim_spec["cdiVersion"], "kind": claim_spec["kind"], "devices": []}
    names = {d["name"] for d in claim_spec["devices"]}
    merged["devices"] = [d for d in merged["devices"] if d["name"] not in names] + claim_spec["devices"]
    return _global_env(merged)


def without_claim_globally(spec: dict[str, Any], claim_uid: str) -> dict[str, Any] | None:
    """The shared spec without the devices of `claim_uid` (None: no device left, the file goes)."""
    spec["devices"] = [d for d in spec["devices"] if not d["name"].startswith(f"{claim_uid}-")]
    return _global_env(spec) if spec["devices"] else None


def _global_env(spec: dict[str, Any]) -> dict[str, Any]:
    env = [line for d in spec["devices"] for line in d["containerEdits"].get("env") or []]
    spec["containerEdits"] = {"env": list(dict.fromkeys(env))}
    return spec
