"""Checks before any `kind create`: each failure says what is wrong and the command that fixes it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.expectations.kind import KIND_INSTALL_VERSION, PUBLISHED_WITH_KIND, image_version
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.dockercli import Docker
from device_conformance.providers.kind.tools import require_kind

# kind's known-issues.md ("Pod errors due to too many open files"; kind #2928, #3317): below these,
# the second or third cluster on a host fails to come up.
INOTIFY_MINIMUMS = {"max_user_watches": 524288, "max_user_instances": 512}
INOTIFY_DIR = Path("/proc/sys/fs/inotify")


def docker_problem(docker: Docker) -> BadInput | None:
    problem = docker.answers()
    if problem is None:
        return None
    return BadInput(
        f"the Docker engine is not reachable ({problem})",
        "start it (`sudo systemctl start docker`, or `sudo dockerd &` without systemd), or run as root with "
        "dockerd installed: the test session then starts a private one; `device-conformance setup --provider "
        "kind` installs Debian's docker.io if no engine is installed",
    )


def inotify_problem(proc_dir: Path | None = None) -> BadInput | None:
    proc_dir = proc_dir or INOTIFY_DIR  # read at call time: tests point INOTIFY_DIR at a folder
    low = {}
    for name, minimum in INOTIFY_MINIMUMS.items():
        try:
            value = int((proc_dir / name).read_text())
        except (OSError, ValueError):
            continue
        if value < minimum:
            low[name] = (value, minimum)
    if not low:
        return None
    found = ", ".join(f"fs.inotify.{name}={value}" for name, (value, _) in low.items())
    fix = " && ".join(f"sudo sysctl fs.inotify.{name}={minimum}" for name, (_, minimum) in low.items())
    return BadInput(
        f"inotify limits are too low for kind nodes ({found}); clusters fail with 'too many open files'",
        f"{fix} (persist in /etc/sysctl.d/99-kind.conf)",
    )


def raise_inotify_limits(proc_dir: Path | None = None) -> list[str]:
    """Raise low inotify limits to kind's minimums (root; until reboot). Returns the sysctls it set."""
    proc_dir = proc_dir or INOTIFY_DIR
    raised = []
    for name, minimum in INOTIFY_MINIMUMS.items():
        path = proc_dir / name
        try:
            if int(path.read_text()) < minimum:
                path.write_text(f"{minimum}\n")
                raised.append(f"fs.inotify.{name}={minimum}")
        except (OSError, ValueError):
            continue
    return raised


def node_image_problem(docker: Docker, image: str) -> BadInput | None:
    if docker.image_present(image):
        return None
    published = ", ".join(PUBLISHED_WITH_KIND[KIND_INSTALL_VERSION])
    return BadInput(
        f"the kind node image {image} is not in the local Docker engine",
        f"`docker pull {image}` where a registry is reachable (or `docker load -i node-image.tar`), "
        f"or pass another image with --kind-image / KIND_NODE_IMAGE (kind {KIND_INSTALL_VERSION} publishes "
        f"kindest/node for {published}: pick K8S_VERSION accordingly)",
    )


def preflight(
    docker: Docker,
    version: KubeVersion,
    image: str,
    *,
    need_image: bool = True,
    clusters: int = 1,
    log: Callable[[str], None] = print,
) -> Path:
    """Return the kind binary, or raise one BadInput listing every problem found.

    Low inotify limits are fatal only when several clusters will run at once (one usually copes)."""
    problems: list[BadInput] = []
    kind: Path | None = None
    try:
        # kind must suit the node image, which may be another version than --k8s-version says.
        kind = require_kind(image_version(image) or version)
    except BadInput as exc:
        problems.append(exc)
    engine = docker_problem(docker)
    if engine is not None:
        problems.append(engine)
    elif need_image and (missing := node_image_problem(docker, image)) is not None:
        problems.append(missing)
    if (limits := inotify_problem()) is not None:
        if clusters > 1:
            problems.append(limits)
        else:
            log(f"warning: {limits}")
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise BadInput(
            "the kind provider cannot run here:\n" + "\n".join(f"  - {p.problem}" for p in problems),
            "\n       ".join(p.fix for p in problems),
        )
    assert kind is not None
    return kind
