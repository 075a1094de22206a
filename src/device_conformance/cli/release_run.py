"""One release's run, shared by `matrix`, `reproduce` and `bisect`: build (or reuse from the cache) that
release's binaries, then run pytest on it with JUnit XML; each step's output goes to a log in `folder`."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from device_conformance.expectations.versions import KubeVersion


def setup(version: KubeVersion, folder: Path, kubelet: KubeVersion | None = None) -> int:
    """`device-conformance setup` for `version` (folder/setup.log), with the node's kubelet at `kubelet`
    when given (only that kubelet is built for it); its exit status."""
    argv = [sys.executable, "-m", "device_conformance.cli", "setup", "--no-packages", *versions(version, kubelet)]
    return _logged(argv, folder / "setup.log")


def pytest(version: KubeVersion, folder: Path, *args: str, kubelet: KubeVersion | None = None) -> tuple[int, Path]:
    """pytest with `args` on `version` (folder/pytest.log), the kubelet at `kubelet` when given; its exit
    status and the JUnit XML path, which exists only if pytest got as far as writing it."""
    junit = folder / "junit.xml"
    argv = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", *versions(version, kubelet)]
    return _logged([*argv, f"--junitxml={junit}"], folder / "pytest.log"), junit


def versions(version: KubeVersion, kubelet: KubeVersion | None) -> list[str]:
    """The version options of `setup` and pytest: the control plane's, and a skewed kubelet's."""
    skew = ["--kubelet-version", str(kubelet)] if kubelet is not None and kubelet != version else []
    return ["--k8s-version", str(version), *skew]


def _logged(argv: Sequence[str], log: Path) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w", encoding="utf-8") as out:
        return subprocess.run(list(argv), stdout=out, stderr=subprocess.STDOUT, check=False).returncode
