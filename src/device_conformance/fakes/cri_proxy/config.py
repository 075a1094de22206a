"""The CRI proxy's configuration: a plain dataclass that round-trips through JSON (the handle writes the file, the
proxy process reads it; nothing else crosses the process boundary)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from device_conformance.core.errors import BadInput

FIX_CONFIG = "write it with CRIProxyConfig(...).save(PATH) (fakes/cri_proxy/config.py)"


@dataclass
class CRIProxyConfig:
    """socket: where the proxy serves CRI (the kubelet's container runtime endpoint, as the test host sees it);
    upstream: the container runtime's socket as the test host reaches it (containerd's)."""

    socket: str
    upstream: str
    control_socket: str = ""
    call_log: str = ""

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: str | Path) -> CRIProxyConfig:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            raise BadInput(f"CRI proxy config {path}: {err}", FIX_CONFIG) from None
        known = {f.name for f in fields(cls)}
        if not isinstance(data, dict) or set(data) - known or not {"socket", "upstream"} <= set(data):
            shown = sorted(data) if isinstance(data, dict) else type(data).__name__
            raise BadInput(
                f"CRI proxy config {path} has {shown}; it takes socket and upstream, optionally control_socket "
                "and call_log",
                FIX_CONFIG,
            )
        return cls(**data)
