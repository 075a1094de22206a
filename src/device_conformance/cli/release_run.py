"""One release's run, shared by `matrix`, `reproduce` and `bisect`: build (or reuse from the cache) that
release's binaries, then run pytest on it with JUnit XML; each step's output goes to a log in `folder`.

Also shared: which releases a comparison runs (a kubelet swapped under the other side's control plane, within
the version-skew policy), and the check made before anything is built or started that every release asked
for can be had here (cached, or served by the Go module proxy: toolchain/module_proxy.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import MATRIX_VERSIONS, KubeVersion, kubelet_skew_allows
from device_conformance.host.process import run_passing_interrupts
from device_conformance.toolchain.binaries import COMPONENTS, KUBELET_ONLY, entry_dir
from device_conformance.toolchain.cache import has_manifest
from device_conformance.toolchain.module_proxy import (
    REFUSED,
    UNKNOWN,
    Proxy,
    ReleaseAnswer,
    check_release,
    goproxy_setting,
    parse_goproxy,
)


def setup(version: KubeVersion, folder: Path, kubelet: KubeVersion | None = None, *, source: Path | None = None) -> int:
    """`device-conformance setup` for `version` (folder/setup.log), with the node's kubelet at `kubelet`
    when given (only that kubelet is built for it), or the binaries built from the source tree `source`;
    its exit status."""
    argv = [
        sys.executable,
        "-m",
        "device_conformance.cli",
        "setup",
        "--no-packages",
        *versions(version, kubelet, source),
    ]
    return _logged(argv, folder / "setup.log")


def pytest(
    version: KubeVersion, folder: Path, *args: str, kubelet: KubeVersion | None = None, source: Path | None = None
) -> tuple[int, Path]:
    """pytest with `args` on `version` (folder/pytest.log), the kubelet at `kubelet` when given, the binaries
    from the source tree `source` when given; its exit status and the JUnit XML path, which exists only if
    pytest got as far as writing it."""
    junit = folder / "junit.xml"
    argv = [sys.executable, "-m", "pytest", *args, "-p", "no:cacheprovider", *versions(version, kubelet, source)]
    return _logged([*argv, f"--junitxml={junit}"], folder / "pytest.log"), junit


def versions(version: KubeVersion, kubelet: KubeVersion | None, source: Path | None = None) -> list[str]:
    """The version options of `setup` and pytest: the control plane's, a skewed kubelet's, a source tree."""
    skew = ["--kubelet-version", str(kubelet)] if kubelet is not None and kubelet != version else []
    tree = ["--k8s-source", str(source)] if source is not None else []
    return ["--k8s-version", str(version), *skew, *tree]


def swap_kubelet(
    version: KubeVersion, other: KubeVersion, kubelet_only: bool
) -> tuple[KubeVersion, KubeVersion | None]:
    """(control plane, kubelet or None for the same) of a run of `version` compared with a run of `other`: with
    `kubelet_only`, an older `version` runs as the kubelet under `other`'s control plane when the version-skew
    policy allows it (so the two runs differ in the kubelet only, and only that kubelet is built); else whole."""
    if kubelet_only and version < other and kubelet_skew_allows(other, version):
        return other, version
    return version, None


def _logged(argv: Sequence[str], log: Path) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as out:
        return run_passing_interrupts(argv, stdout=out)  # Ctrl-C lets the run tear its clusters down


# -- can the releases be had? --------------------------------------------------------------------------------


def needed(control_plane: KubeVersion, kubelet: KubeVersion | None) -> list[tuple[KubeVersion, tuple[str, ...]]]:
    """The binaries one run needs: the control plane's four, and a skewed kubelet's."""
    wanted = [(control_plane, COMPONENTS)]
    if kubelet is not None and kubelet != control_plane:
        wanted.append((kubelet, KUBELET_ONLY))
    return wanted


def cached(version: KubeVersion, components: Sequence[str]) -> bool:
    """Whether the cache holds these binaries of `version` (a full entry serves a kubelet-only need)."""
    return any(
        has_manifest(entry, components) for entry in dict.fromkeys((entry_dir(version), entry_dir(version, components)))
    )


Check = Callable[[KubeVersion, Sequence[Proxy]], ReleaseAnswer]


def refuse_unavailable(
    wanted: Iterable[tuple[KubeVersion, Sequence[str]]],
    say: Callable[[str], None],
    *,
    check: Check | None = None,
    is_cached: Callable[[KubeVersion, Sequence[str]], bool] | None = None,
    goproxy: Callable[[], str] | None = None,
) -> None:
    """Raise BadInput, before anything is built or started, naming every release in `wanted` whose binaries are
    not cached and which the Go module proxy does not serve (or whose build modules it refuses). A release the
    proxy could not be asked about is said and let through: its build names what fails. K8S_BIN_DIR set: the
    binaries come from there, nothing is asked."""
    if os.environ.get("K8S_BIN_DIR"):
        return
    check, is_cached, goproxy = check or check_release, is_cached or cached, goproxy or goproxy_setting
    missing = list(dict.fromkeys(version for version, components in wanted if not is_cached(version, components)))
    if not missing:
        return
    setting = goproxy()
    proxies = parse_goproxy(setting)
    refused = []
    for version in missing:
        say(f"{version} is not cached: asking the Go module proxy (GOPROXY={setting}) whether it can be built")
        answer = check(version, proxies)
        if answer.state == UNKNOWN:
            say(
                f"could not ask the Go module proxy about {version} ({answer.detail}): going on, the build will "
                "name what fails"
            )
        elif answer.state == REFUSED:
            refused.append(answer)
    if refused:
        raise BadInput(
            "cannot be had here, so nothing was built or started: "
            + "; ".join(f"Kubernetes {answer.version}: {answer.detail}" for answer in refused),
            "; ".join(_fix(answer.version) for answer in refused)
            + "; or set K8S_BIN_DIR to release binaries of it, or build a Kubernetes source tree of it with "
            "K8S_SOURCE (`device-conformance k8s-source get`; reproduce: --affected-source / --fixed-source DIR). "
            "`device-conformance versions` says per minor what the proxy serves",
        )


def _fix(version: KubeVersion) -> str:
    served = [v for v in MATRIX_VERSIONS if (v.major, v.minor) == (version.major, version.minor)]
    if served:
        return f"use a patch the proxy serves instead of {version}, e.g. 1.{version.minor}'s matrix release {served[0]}"
    return f"use a release the proxy serves instead of {version} (the matrix: {', '.join(map(str, MATRIX_VERSIONS))})"
