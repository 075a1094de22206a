"""Unix socket paths: the kernel's length limit, and removing what a killed fake left behind."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile

from device_conformance.core.errors import BadInput

SUN_PATH_MAX = 107  # bytes a Unix socket path may have on Linux (sun_path is 108 with the NUL)


# What a process's log says when a socket path exceeds sun_path: Go's net.Listen (syscall EINVAL), gRPC C-core
# (src/core/lib/address_utils/parse_address.cc, under Python's and C++'s servers: it refuses paths of 106 bytes
# and more), CPython's socket module.
SUN_PATH_SIGNS = (
    "bind: invalid argument",
    f"should not have more than {SUN_PATH_MAX} characters",
    "AF_UNIX path too long",
)
# An absolute path in a log line (an address as unix://PATH or unix:PATH included).
_PATH_IN_LOG = re.compile(r"(?:unix:(?://)?)?(/[^\s'\",;:)]+)")


def fits(path: str) -> bool:
    return len(os.fsencode(path)) <= SUN_PATH_MAX


def check_socket_path(path: str, what: str) -> None:
    if not fits(path):
        raise BadInput(
            f"{what} path is {len(os.fsencode(path))} bytes, over the {SUN_PATH_MAX}-byte limit: {path}",
            "use a shorter directory, e.g. one from tempfile.mkdtemp(dir='/tmp')",
        )


def control_socket_path(preferred: str, prefix: str) -> tuple[str, str | None]:
    """`preferred` when it fits in sun_path, else a socket in a new short directory under /tmp (returned
    second, for the caller to remove)."""
    if fits(preferred):
        return preferred, None
    short_dir = tempfile.mkdtemp(prefix=prefix, dir="/tmp")
    return os.path.join(short_dir, "ctl"), short_dir


def remove_socket(path: str) -> None:
    """Remove path if it is a socket; leave anything else alone."""
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(os.lstat(path).st_mode):
            os.unlink(path)


def log_paths(log: str) -> list[str]:
    """The absolute paths a log names, in the order first seen."""
    return list(dict.fromkeys("/" + p.lstrip("/") for p in _PATH_IN_LOG.findall(log)))


def too_long_paths(log: str) -> list[str]:
    """The paths longer than SUN_PATH_MAX bytes that a log names, in the order first seen."""
    return [p for p in log_paths(log) if not fits(p)]


def sun_path_trouble(log: str) -> str | None:
    """The log lines saying that a process could not bind a socket because its path exceeds sun_path (a line with
    one of SUN_PATH_SIGNS, or one naming a path over SUN_PATH_MAX bytes), each as "  log: LINE"; None if none."""
    lines = [
        line.strip() for line in log.splitlines() if any(s in line for s in SUN_PATH_SIGNS) or too_long_paths(line)
    ]
    return "\n".join(f"  log: {line[:400]}" for line in lines[:5]) or None
