"""Dying as a Go plugin or driver does on an unrecovered panic: its message on stderr, exit status 2, no clean-up.

Go's runtime prints "panic: <value>" and the goroutines' traces on stderr and exits 2 (runtime/panic.go, fatalpanic;
runtime/proc.go, exit(2)); the certifier reports that exit and quotes those lines (certify/crash.py).
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

GO_PANIC_EXIT = 2


def with_goroutine(message: str, frame: str) -> str:
    """A panic's message followed by the running goroutine's top frame, as Go prints them."""
    return f"{message}\n\ngoroutine 1 [running]:\n{frame}"


def go_panic(message: str) -> NoReturn:
    """Print "panic: <message>" on stderr and exit at once with status 2 (no atexit, no finally, no socket removal)."""
    sys.stdout.flush()
    print(f"panic: {message}", file=sys.stderr, flush=True)
    os._exit(GO_PANIC_EXIT)
