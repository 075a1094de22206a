"""CDI spec files (Container Device Interface, https://github.com/cncf-tags/container-device-interface):
writing them so the container runtime never reads half a file, and removing them.

The runtime resolves a fully qualified CDI device name `vendor/class=device` from the spec files in its
CDI spec directories (the node's /var/run/cdi here) when a container is created. Kept minimal: what the
fakes write is `containerEdits.env`, which a container can print.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

CDI_VERSION = "0.6.0"


def spec(kind: str, devices: dict[str, Sequence[str]]) -> dict[str, Any]:
    """A spec of `kind` ("vendor/class") with one device per entry: device name -> its env edits ("K=V")."""
    return {
        "cdiVersion": CDI_VERSION,
        "kind": kind,
        "devices": [{"name": name, "containerEdits": {"env": list(env)}} for name, env in devices.items()],
    }


def write_spec(path: str, content: dict[str, Any]) -> None:
    """Write atomically: the runtime's CDI cache watches the directory and must never read half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    # A leading dot and no .json suffix: CDI caches ignore the temporary file.
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(content, f, indent=2)
    os.replace(tmp, path)


def remove_spec(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
