"""Where node-image pieces are cached and the content key that says when one must be rebuilt.

Every piece (the Debian root filesystem, each component build, the final image tarball) is a cache
entry of toolchain/cache.py: filled once under a lock, appearing by an atomic rename, checksummed. Its
directory name carries a hash of everything that goes into it, so a changed input makes a new entry
and an unchanged one is reused as is.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

from device_conformance.toolchain.cache import cache_root

KEY_LENGTH = 16


def node_cache() -> Path:
    """The node-image part of the binary cache (`~/.cache/device-conformance/kind-node`)."""
    return cache_root() / "kind-node"


def content_key(inputs: Mapping[str, object]) -> str:
    """A short hash of `inputs` (JSON-serialisable): equal inputs, equal key; any change, another key."""
    canonical = json.dumps(inputs, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:KEY_LENGTH]


def entry(kind: str, inputs: Mapping[str, object]) -> Path:
    """The cache entry directory of a piece `kind` made from `inputs`; `inputs.json` in it records them."""
    return node_cache() / kind / content_key(inputs)


def record_inputs(directory: Path, inputs: Mapping[str, object]) -> None:
    (directory / "inputs.json").write_text(json.dumps(inputs, sort_keys=True, indent=1, default=str) + "\n")
