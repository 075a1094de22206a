"""Unix socket paths: the kernel's length limit, and removing what a killed fake left behind."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

from device_conformance.errors import BadInput

SUN_PATH_MAX = 107  # bytes a Unix socket path may have on Linux (sun_path is 108 with the NUL)


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
