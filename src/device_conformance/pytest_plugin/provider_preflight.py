"""With pytest-xdist, check the kind provider's prerequisites once, on the controller, before workers start.

A worker that cannot bring its cluster up can only fail its tests; xdist turns a pytest.exit there into
an INTERNALERROR without our message. So missing Docker, kind, node image or inotify headroom for N
clusters are reported here, once, as a usage error naming the fix.
"""

from __future__ import annotations

import pytest

from device_conformance.errors import BadInput


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or config.getoption("--provider") != "kind":
        return
    workers = getattr(config.option, "numprocesses", None)
    if not workers or getattr(config.option, "collectonly", False):
        return
    from device_conformance.dockercli import Docker
    from device_conformance.expectations.kind import default_node_image
    from device_conformance.expectations.versions import KubeVersion
    from device_conformance.providers.kind.preflight import preflight

    version = KubeVersion.parse(config.getoption("--k8s-version"))
    image = config.getoption("--kind-image") or default_node_image(version)
    reuse = bool(config.getoption("--kind-cluster"))
    try:
        preflight(Docker(), version, image, need_image=not reuse, clusters=1 if reuse else int(workers))
    except BadInput as exc:
        raise pytest.UsageError(f"--provider kind cannot run here:\n{exc}") from None
