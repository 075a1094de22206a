"""`device-conformance setup --provider kind`: Docker engine, kind, our images and node image; no cluster.

Setup installs and builds; it starts no daemon. Where no Docker engine answers, the test session starts
a private dockerd for itself (engine.py) and loads the node image built here into it.
"""

from __future__ import annotations

import os

from device_conformance.core.errors import BadInput
from device_conformance.expectations.kind import default_node_image
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.dockercli import Docker
from device_conformance.providers.kind import engine, host, preflight
from device_conformance.providers.kind.dockerd import host_missing_capabilities
from device_conformance.providers.kind.tools import find_kind, install_kind, kind_version, require_kind
from device_conformance.settings import Settings
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.images.build import build_images


def from_settings(settings: Settings, *, install_packages: bool = True) -> int:
    """`setup` for a session's settings (settings.PROVIDER_CAPABILITIES["kind"].setup): the node image the user
    chose, else the default one (ours where none is published)."""
    chosen = settings.kind_image.value if settings.kind_image.source.kind != "default" else None
    return setup_kind(settings.k8s_version.value, install_packages=install_packages, image=chosen)


def setup_kind(version: KubeVersion, *, install_packages: bool = True, image: str | None = None) -> int:
    docker = Docker()
    if install_packages:
        installed = host.install_docker_engine(docker)
        print(f"Docker engine: {'installed ' + host.DOCKER_PACKAGE if installed else 'present'}")
    try:
        kind = require_kind(version)
    except BadInput:
        kind = install_kind()
    print(f"kind: {kind} (v{'.'.join(map(str, kind_version(kind)))})")
    if find_kind() != kind:
        print(f"  (not on PATH: export KIND={kind})")
    for built in build_images(cache_root() / "images"):
        print(f"image {built.name}: {built.tarball}")
    answers = docker.answers() is None
    node_image = image or default_node_image(version)
    # Our build may be needed (no published image in an engine): its Debian packages first.
    build_possible = image is None and not (answers and docker.image_present(node_image))
    if install_packages and build_possible and (installed_for_image := host.install_node_image_packages()):
        print(f"Debian packages for the node image: installed {', '.join(installed_for_image)}")
    if answers:
        # The default, published image when the engine has it; else our build, loaded into it.
        used = engine.ensure_node_image(docker, version, node_image, ours=image is None)
        if docker.image_present(used):
            print(f"node image {used}: in the Docker engine")
    elif image is None:
        name, tarball = engine.build_node_image(version)
        print(f"node image {name}: {tarball} (loaded into the session's private dockerd)")
    if not answers:
        why_not = engine.private_engine_possible()
        if why_not is None:
            print("Docker engine: none answers; the test session will start a private dockerd and stop it at the end")
        else:
            print(f"still needed: {preflight.docker_problem(docker)} ({why_not})")
    if missing := host_missing_capabilities():
        print(
            f"privileged containers: this host's capability bounding set lacks {', '.join(missing)}; the private "
            "dockerd runs containers through a runc wrapper that drops them (an engine of yours needs the same, "
            "see docs/providers/kind.md, 'kind on hosts with a reduced capability bounding set')"
        )
    if install_packages and os.geteuid() == 0 and (raised := preflight.raise_inotify_limits()):
        # kind's known-issues.md: several clusters at once (-n 2) need these; set until the next boot.
        print(f"inotify limits raised for kind: sysctl {' '.join(raised)}")
    if (limits := preflight.inotify_problem()) is not None:
        print(f"still needed: {limits}")
    if answers and image is not None and (missing_image := preflight.node_image_problem(docker, image)) is not None:
        print(f"still needed: {missing_image}")
    return 0
