"""Provider names -> their code, loaded lazily from settings.PROVIDER_CAPABILITIES (settings.py picks `auto`).

Only the chosen provider's modules are imported: `setup` for local never imports kind's, and a fake never any."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from device_conformance.core.errors import BadInput
from device_conformance.providers.base import Provider
from device_conformance.settings import PROVIDER_CAPABILITIES, PROVIDERS, Settings


def load(target: str) -> Callable[..., Any]:
    """A "module:function" of PROVIDER_CAPABILITIES, imported now."""
    module, _, function = target.partition(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found


def make_provider(settings: Settings, *, log: Callable[[str], None], artifacts: Path | None = None) -> Provider:
    name = settings.provider.value
    if name not in PROVIDER_CAPABILITIES:
        raise BadInput(
            f"unknown provider {name!r} ({settings.provider.source})", f"choose one of: {', '.join(PROVIDERS)}"
        )
    return cast(Provider, load(PROVIDER_CAPABILITIES[name].make)(settings, log=log, artifacts=artifacts))
