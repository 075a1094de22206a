"""The Docker engine and node image a kind session runs on: the user's when there is one, else ours.

A run that finds a Docker engine answering (DOCKER_HOST, or the default socket), kind and the node image
builds and starts nothing. Where no engine answers but Debian's dockerd is installed and we are root,
the session starts a private dockerd (dockerd.py), points DOCKER_HOST at it for itself and its xdist
workers, and stops it at the end; the node image is loaded into it from our build's tarball.
"""

from __future__ import annotations

import importlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.dockercli import Docker
from device_conformance.providers.kind.dockerd import PrivateDockerd

Log = Callable[[str], None]
# Our node images come from `device-conformance cluster build-node-image --provider kind` (toolchain/nodeimage/).
NODE_IMAGE_BUILDER = "device_conformance.toolchain.nodeimage.assemble"
# The name our builds get when the builder is missing (assemble.default_name(); kept in step with it).
OWN_IMAGE_NAME = "device-conformance.local/kind-node:{tag}"


def private_engine_possible() -> str | None:
    """None when this process can start a private dockerd; otherwise why not."""
    if shutil.which("dockerd") is None:
        return "dockerd is not installed (`device-conformance setup --provider kind` installs Debian's docker.io)"
    if os.geteuid() != 0:
        return "starting a private dockerd needs root"
    return None


def ensure_engine(log: Log = print) -> PrivateDockerd | None:
    """None when a Docker engine answers already; else a started private one, DOCKER_HOST pointing at it.

    Raises BadInput when none answers and none can be started."""
    problem = Docker().answers()
    if problem is None:
        return None
    why_not = private_engine_possible()
    if why_not is not None:
        raise BadInput(
            f"no Docker engine answers ({problem}) and {why_not}",
            "start Docker (`sudo systemctl start docker`), or run as root with dockerd installed",
        )
    engine = PrivateDockerd.start(kind_network=True, log=log)
    # The kind CLI and `docker` (dockercli.Docker() without a host) read it; xdist workers inherit it.
    os.environ["DOCKER_HOST"] = engine.host
    return engine


def release_engine(engine: PrivateDockerd | None, previous_host: str | None) -> None:
    if engine is None:
        return
    try:
        engine.stop()
    finally:
        if previous_host is None:
            os.environ.pop("DOCKER_HOST", None)
        else:
            os.environ["DOCKER_HOST"] = previous_host


def _builder() -> ModuleType:
    try:
        return importlib.import_module(NODE_IMAGE_BUILDER)
    except ModuleNotFoundError as exc:
        if exc.name is not None and NODE_IMAGE_BUILDER.startswith(exc.name):
            raise BadInput(
                "this installation cannot build a kind node image (toolchain/nodeimage/, behind "
                "`device-conformance cluster build-node-image --provider kind`, is missing)",
                "load one: `docker pull kindest/node:vX.Y.Z` where a registry is reachable, or "
                "`docker load -i node-image.tar`, and pass it with --kind-image / KIND_NODE_IMAGE",
            ) from None
        raise


def own_image_name(version: KubeVersion) -> str:
    """What our build of `version` is called: not kindest/node, a published name (kind pins its digests)."""
    try:
        return str(_builder().default_name(version))
    except BadInput:
        return OWN_IMAGE_NAME.format(tag=version.tag)


def build_node_image(version: KubeVersion, log: Log = print) -> tuple[str, Path]:
    """Our node image for `version` (built when its inputs changed): its name and `docker load` tarball."""
    built = _builder().build_node_image(version, progress=log)
    return str(built.name), Path(built.tarball)


def ensure_node_image(docker: Docker, version: KubeVersion, image: str, *, ours: bool, log: Log = print) -> str:
    """The node image the session runs, present in `docker`.

    `image` when the engine has it, or when the user chose it (`ours` False: a missing one is left to
    preflight, which says how to get it). Otherwise the default, published image is missing: our build
    of `version` is used instead, loaded from its tarball unless the engine has it already."""
    if not ours or docker.image_present(image):
        return image
    own = own_image_name(version)
    if docker.image_present(own):
        log(f"{image} is not in the Docker engine: using our build {own}, which is")
        return own
    name, tarball = build_node_image(version, log)
    log(f"{image} is not in the Docker engine: loading our build {name} ({tarball})")
    docker.run(["load", "-i", str(tarball)], timeout=1200)
    return name
