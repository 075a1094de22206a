"""The docker CLI, pointed at one engine (DOCKER_HOST), with errors you can paste into a shell."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field

from device_conformance.core.errors import BadInput, CommandError

DOCKER_TIMEOUT = 300


@dataclass(frozen=True)
class Docker:
    """`host` is a DOCKER_HOST value (unix:///path/docker.sock); None means the user's default engine."""

    host: str | None = None
    binary: str = field(default_factory=lambda: os.environ.get("DOCKER", "docker"))

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        if self.host is not None:
            env["DOCKER_HOST"] = self.host
        return env

    def argv(self, args: Sequence[str]) -> list[str]:
        return [self.binary, *args]

    def run(
        self,
        args: Sequence[str],
        *,
        check: bool = True,
        stdin: bytes | None = None,
        timeout: float | None = DOCKER_TIMEOUT,
    ) -> subprocess.CompletedProcess[bytes]:
        """Run `docker ARGS`; stdout and stderr are kept apart (file reads must not mix in warnings)."""
        if shutil.which(self.binary) is None:
            raise BadInput(
                f"the docker CLI ({self.binary}) is not on PATH",
                "install Docker (`device-conformance setup --provider kind` installs Debian's docker.io)",
            )
        proc = subprocess.run(
            self.argv(args), input=stdin, capture_output=True, env=self.env, timeout=timeout, check=False
        )
        if check and proc.returncode != 0:
            output = (proc.stdout + proc.stderr).decode(errors="replace")
            raise CommandError(self.argv(args), proc.returncode, output)
        return proc

    def text(self, args: Sequence[str], **kwargs: object) -> str:
        return self.run(args, **kwargs).stdout.decode(errors="replace")  # type: ignore[arg-type]

    def answers(self) -> str | None:
        """None when the engine answers `docker info`; otherwise what went wrong."""
        if shutil.which(self.binary) is None:
            return f"the docker CLI ({self.binary}) is not on PATH"
        try:
            proc = self.run(["info", "--format", "{{.ServerVersion}}"], check=False, timeout=30)
        except subprocess.TimeoutExpired:
            return "`docker info` did not answer within 30s"
        if proc.returncode != 0:
            return (proc.stderr or proc.stdout).decode(errors="replace").strip() or f"exit {proc.returncode}"
        return None

    def image_present(self, image: str) -> bool:
        return self.run(["image", "inspect", image], check=False, timeout=60).returncode == 0

    def container_running(self, name: str) -> bool:
        proc = self.run(["inspect", "--format", "{{.State.Running}}", name], check=False, timeout=60)
        return proc.returncode == 0 and proc.stdout.strip() == b"true"
