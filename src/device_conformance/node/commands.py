"""The one primitive everything written once on top of a node transport needs: run a command there."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class CommandRunner(Protocol):
    """NodeTransport.run, handed to what is written once on top of it (crictl, systemctl)."""

    def __call__(
        self, argv: Sequence[str], *, stdin: bytes | None = None, check: bool = True, timeout: float = 120
    ) -> bytes: ...
