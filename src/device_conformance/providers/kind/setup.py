"""`device-conformance setup --provider kind`: Docker engine, kind, our images; no Kubernetes build."""

from __future__ import annotations

from device_conformance.dockercli import Docker
from device_conformance.errors import BadInput
from device_conformance.expectations.kind import default_node_image
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.kind import host, preflight
from device_conformance.providers.kind.tools import find_kind, install_kind, kind_version, require_kind
from device_conformance.toolchain.cache import cache_root
from device_conformance.toolchain.images.build import build_images


def setup_kind(version: KubeVersion, *, install_packages: bool = True) -> int:
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
    for image in build_images(cache_root() / "images"):
        print(f"image {image.name}: {image.tarball}")
    # What is still missing is reported, not fatal: setup installs, it does not start daemons or pull.
    image = default_node_image(version)
    for check in (
        preflight.docker_problem(docker),
        preflight.inotify_problem(),
    ):
        if check is not None:
            print(f"still needed: {check}")
    if docker.answers() is None and (missing := preflight.node_image_problem(docker, image)) is not None:
        print(f"still needed: {missing}")
    return 0
