"""Where our `go` commands keep their temporary work directories (`$GOTMPDIR/go-build*`).

The go command removes its work directory as it exits, also on SIGINT, but a SIGKILLed one leaves it
behind (cmd/go/internal/work/action.go: Builder.Close, which runs as the command exits). Left in
/tmp such a directory cannot be told from another program's. So each process of ours points GOTMPDIR at
a directory of its own under the cache, `go-tmp/<pid>/`, removes it at exit, and removes those of
processes that are gone when it claims its own.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
from pathlib import Path

from device_conformance.host.process import pid_alive
from device_conformance.toolchain.cache import cache_root

ENV = "GOTMPDIR"
# A directory this code made: <cache>/go-tmp/<pid>. Any other GOTMPDIR is the user's choice and is kept.
_OURS = re.compile(r"/go-tmp/\d+/?$")


def go_tmp_root() -> Path:
    return cache_root() / "go-tmp"


def which_go() -> str | None:
    """`go` on PATH, as shutil.which finds it, with GOTMPDIR claimed for the go commands we start."""
    go = shutil.which("go")
    if go is not None:
        claim_go_tmpdir()
    return go


def claim_go_tmpdir() -> Path | None:
    """Set GOTMPDIR to this process's directory under the cache; returns it (None: the user set their own).

    A GOTMPDIR of ours that exists is kept: this process claimed it already, or a parent of ours (pytest's
    controller for its xdist workers) did and removes it when it exits."""
    current = os.environ.get(ENV)
    if current and not _OURS.search(current):
        return None
    if current and Path(current).is_dir():
        return Path(current)
    root = go_tmp_root()
    remove_orphans(root)
    mine = root / str(os.getpid())
    mine.mkdir(parents=True, exist_ok=True)
    os.environ[ENV] = str(mine)
    atexit.register(shutil.rmtree, mine, True)
    return mine


def remove_orphans(root: Path) -> list[Path]:
    """Remove the go-tmp/<pid> directories whose process is gone; returns them."""
    if not root.is_dir():
        return []
    removed = []
    for entry in sorted(root.iterdir()):
        if entry.name.isdigit() and not pid_alive(int(entry.name)):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed
