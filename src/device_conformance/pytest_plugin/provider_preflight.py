"""With pytest-xdist, check the kind provider's prerequisites once, on the controller, before workers start.

A worker that cannot bring its cluster up can only fail its tests; xdist turns a pytest.exit there into
an INTERNALERROR without our message. So missing Docker, kind, node image or inotify headroom for N
clusters are reported here, once, as a usage error naming the fix.
"""

from __future__ import annotations

import pytest

from device_conformance.errors import BadInput
from device_conformance.fixtures.session import session_settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    workers = getattr(config.option, "numprocesses", None)
    if not workers or getattr(config.option, "collectonly", False):
        return
    try:
        settings = session_settings(config)
    except BadInput:
        return  # reported by the session's preparation, if a test needs a cluster at all
    if settings.provider.value != "kind":
        return
    from device_conformance.dockercli import Docker
    from device_conformance.providers.kind.preflight import preflight

    reuse = settings.kind_cluster.value is not None
    try:
        preflight(
            Docker(),
            settings.k8s_version.value,
            settings.kind_image.value,
            need_image=not reuse,
            clusters=1 if reuse else int(workers),
        )
    except BadInput as exc:
        raise pytest.UsageError(f"--provider kind cannot run here:\n{exc}") from None
