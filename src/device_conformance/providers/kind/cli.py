"""The kind CLI for one cluster name: create, reuse, list nodes, load images, export logs, delete."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from device_conformance.host.dockercli import Docker
from device_conformance.host.process import run

CREATE_WAIT = "180s"


@dataclass(frozen=True)
class KindCLI:
    kind: Path
    docker: Docker

    def _run(self, args: list[str], *, timeout: float = 600, check: bool = True) -> str:
        # kind shells out to `docker`; DOCKER_HOST in the environment picks the engine.
        env = {"DOCKER_HOST": self.docker.host} if self.docker.host else None
        return run([str(self.kind), *args], env=env, timeout=timeout, check=check).stdout

    def clusters(self) -> list[str]:
        return [line for line in self._run(["get", "clusters"], timeout=60).splitlines() if line and " " not in line]

    def exists(self, name: str) -> bool:
        return name in self.clusters()

    def nodes(self, name: str) -> list[str]:
        return sorted(line for line in self._run(["get", "nodes", "--name", name], timeout=60).split() if line)

    def create(self, name: str, config: Path, kubeconfig: Path) -> None:
        """`--retain` keeps the nodes of a failed create for `kind export logs` (we delete them after)."""
        self._run(
            ["create", "cluster", "--name", name, "--config", str(config), "--kubeconfig", str(kubeconfig),
             "--wait", CREATE_WAIT, "--retain"],
            timeout=900,
        )  # fmt: skip

    def export_kubeconfig(self, name: str, kubeconfig: Path) -> None:
        self._run(["export", "kubeconfig", "--name", name, "--kubeconfig", str(kubeconfig)], timeout=60)

    def load_image_archive(self, name: str, tarball: Path) -> None:
        self._run(["load", "image-archive", str(tarball), "--name", name], timeout=600)

    def export_logs(self, name: str, target: Path) -> str:
        """Node journals, kubelet.log, containerd.log, pod logs, inspect.json (kind's own collection)."""
        target.mkdir(parents=True, exist_ok=True)
        return self._run(["export", "logs", str(target), "--name", name], timeout=300, check=False)

    def delete(self, name: str, kubeconfig: Path | None = None) -> None:
        args = ["delete", "cluster", "--name", name]
        if kubeconfig is not None:
            args += ["--kubeconfig", str(kubeconfig)]
        self._run(args, timeout=300)

    def node_mounts(self, container: str) -> dict[str, Path]:
        """The node's bind mounts (node path -> host path), read from Docker: the truth for any cluster."""
        raw = self.docker.text(["inspect", "--format", "{{json .Mounts}}", container], timeout=60)
        return {m["Destination"]: Path(m["Source"]) for m in json.loads(raw) or [] if m.get("Type") == "bind"}
