"""--provider kind: the Docker engine and node image, then the prerequisites, once, on the controller.

The controller (the only process without xdist) owns the session's Docker engine: where none answers it
starts a private dockerd (providers/kind/engine.py) before xdist spawns its workers, so they inherit
DOCKER_HOST, and stops it at unconfigure (also after Ctrl-C; SIGTERM is turned into a Ctrl-C meanwhile).
A missing default node image is loaded from our build. Nothing is started for a user whose engine answers.

With pytest-xdist, a worker that cannot bring its cluster up can only fail its tests; xdist turns a
pytest.exit there into an INTERNALERROR without our message. So missing Docker, kind, node image or
inotify headroom for N clusters are reported here, once, as a usage error naming the fix.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from types import FrameType

import pytest

from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.fixtures.session import SETTINGS, say, session_settings
from device_conformance.settings import Setting, Settings, Source


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _own_engine(config: pytest.Config) -> None:
    """Start a private dockerd if no engine answers; register its stop; restore SIGTERM at the end."""
    from device_conformance.providers.kind.engine import ensure_engine, release_engine

    previous_host = os.environ.get("DOCKER_HOST")
    engine = ensure_engine(log=lambda message: say(config, message))
    if engine is None:
        return
    previous_term = signal.signal(signal.SIGTERM, _interrupt)

    def stop() -> None:
        say(config, f"stopping the private dockerd ({engine.root})")
        try:
            release_engine(engine, previous_host)
        finally:
            signal.signal(signal.SIGTERM, previous_term)

    config.add_cleanup(stop)


def _use_image(config: pytest.Config, settings: Settings, image: str) -> Settings:
    """Run the session (and its xdist workers, through the environment) on `image` instead of the default."""
    previous = os.environ.get("KIND_NODE_IMAGE")
    os.environ["KIND_NODE_IMAGE"] = image

    def restore() -> None:
        if previous is None:
            os.environ.pop("KIND_NODE_IMAGE", None)
        else:
            os.environ["KIND_NODE_IMAGE"] = previous

    config.add_cleanup(restore)
    note = f"our build: {settings.kind_image.value} is not in the Docker engine"
    changed = dataclasses.replace(settings, kind_image=Setting(image, Source("default", note=note)))
    config.stash[SETTINGS] = changed
    return changed


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or getattr(config.option, "collectonly", False):
        return
    try:
        settings = session_settings(config)
    except BadInput:
        return  # reported by the session's preparation, if a test needs a cluster at all
    if not settings.capabilities.nodes_in_docker:
        return
    from device_conformance.host.dockercli import Docker
    from device_conformance.providers.kind.engine import ensure_node_image
    from device_conformance.providers.kind.preflight import preflight

    reuse = settings.kind_cluster.value is not None
    workers = getattr(config.option, "numprocesses", None)
    clusters = 1 if reuse else int(workers or 1)

    def check(need_image: bool) -> None:
        if workers:
            log = (lambda message: say(config, message)) if need_image else (lambda _: None)
            preflight(Docker(), settings.k8s_version.value, settings.kind_image.value,
                      need_image=need_image, clusters=clusters, log=log)  # fmt: skip

    try:
        try:
            _own_engine(config)
        except BadInput as no_engine:
            # Say what else is missing too (kind, inotify), not only the engine.
            try:
                check(need_image=False)
            except BadInput as others:
                raise ConformanceError(f"{no_engine}\n{others}") from None
            raise
        check(need_image=False)  # kind and the engine before a node image is built for nothing
        if not reuse:
            image = ensure_node_image(
                Docker(),
                settings.k8s_version.value,
                settings.kind_image.value,
                ours=settings.kind_image.source.kind == "default",
                log=lambda message: say(config, message),
            )
            if image != settings.kind_image.value:
                settings = _use_image(config, settings, image)
        check(need_image=not reuse)
    except ConformanceError as exc:
        raise pytest.UsageError(f"--provider kind cannot run here:\n{exc}") from None
