"""The container runtime's CRI as the harness uses it: list and remove pod sandboxes (upstream's reboot
simulation), read the runtime's Status. Two ways in, one contract (CRIRuntime): gRPC on a socket the
host reaches (local provider), or crictl run on the node (kind; any node with crictl)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

import grpc

from device_conformance.core.errors import ConformanceError
from device_conformance.node.commands import CommandRunner
from device_conformance.protos.cri.v1 import api_pb2, api_pb2_grpc

CRI_TIMEOUT_SECONDS = 60


@dataclass(frozen=True)
class Sandbox:
    id: str
    name: str
    namespace: str
    uid: str
    ready: bool


class CRIRuntime(Protocol):
    """What the harness asks of a node's container runtime."""

    def sandboxes(self) -> list[Sandbox]:
        """Every pod sandbox (CRI ListPodSandbox), ready or not."""
        ...

    def status_info(self) -> dict[str, Any]:
        """The runtime's verbose CRI Status info, JSON values decoded (containerd: {"config": {...}, ...})."""
        ...

    def remove_all_sandboxes(self) -> list[str]:
        """Stop and remove every pod sandbox; returns the ids removed."""
        ...

    def container_annotations(self, container_id: str) -> dict[str, str]:
        """The annotations of one container (CRI ContainerStatus.status.annotations: by the CRI contract
        those of the ContainerConfig the kubelet created it with, unaltered by the runtime)."""
        ...

    def container_pid(self, container_id: str) -> int:
        """The pid (in the node) of a running container's main process (verbose CRI ContainerStatus)."""
        ...


class CRIClient:
    """Talks runtime.v1.RuntimeService on a Unix socket (containerd's CRI plugin)."""

    def __init__(self, socket_path: str) -> None:
        self._channel = grpc.insecure_channel(f"unix://{socket_path}")
        self._runtime = api_pb2_grpc.RuntimeServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> CRIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def version(self) -> str:
        reply = self._runtime.Version(api_pb2.VersionRequest(version="v1"), timeout=CRI_TIMEOUT_SECONDS)
        return f"{reply.runtime_name} {reply.runtime_version}"

    def status_info(self) -> dict[str, Any]:
        """The runtime's verbose Status info, JSON values decoded (containerd: its effective CRI config
        under "config", with enableCDI and cdiSpecDirs)."""
        reply = self._runtime.Status(api_pb2.StatusRequest(verbose=True), timeout=CRI_TIMEOUT_SECONDS)
        info: dict[str, Any] = {}
        for key, value in reply.info.items():
            try:
                info[key] = json.loads(value)
            except ValueError:
                info[key] = value
        return info

    def sandboxes(self) -> list[Sandbox]:
        reply = self._runtime.ListPodSandbox(api_pb2.ListPodSandboxRequest(), timeout=CRI_TIMEOUT_SECONDS)
        return [
            Sandbox(
                id=item.id,
                name=item.metadata.name,
                namespace=item.metadata.namespace,
                uid=item.metadata.uid,
                ready=item.state == api_pb2.SANDBOX_READY,
            )
            for item in reply.items
        ]

    def remove_sandbox(self, sandbox_id: str) -> None:
        # Stop first: it tears the network down through CNI, then remove deletes the containers.
        self._runtime.StopPodSandbox(
            api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id), timeout=CRI_TIMEOUT_SECONDS
        )
        self._runtime.RemovePodSandbox(
            api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id), timeout=CRI_TIMEOUT_SECONDS
        )

    def remove_all_sandboxes(self) -> list[str]:
        """Remove every pod sandbox (upstream's reboot simulation); returns the ids removed."""
        removed = [sandbox.id for sandbox in self.sandboxes()]
        for sandbox_id in removed:
            self.remove_sandbox(sandbox_id)
        return removed

    def container_annotations(self, container_id: str) -> dict[str, str]:
        reply = self._runtime.ContainerStatus(
            api_pb2.ContainerStatusRequest(container_id=container_id), timeout=CRI_TIMEOUT_SECONDS
        )
        return dict(reply.status.annotations)

    def container_pid(self, container_id: str) -> int:
        reply = self._runtime.ContainerStatus(
            api_pb2.ContainerStatusRequest(container_id=container_id, verbose=True), timeout=CRI_TIMEOUT_SECONDS
        )
        return pid_of(dict(reply.info), container_id)


class Crictl:
    """CRIRuntime through `crictl` on the node (kind's node image ships it, pointed at containerd)."""

    def __init__(self, run: CommandRunner) -> None:
        self._run = run

    def __enter__(self) -> Crictl:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def sandboxes(self) -> list[Sandbox]:
        reply = json.loads(self._run(["crictl", "pods", "--output", "json"]) or "{}")
        return [
            Sandbox(
                id=item["id"],
                name=item["metadata"]["name"],
                namespace=item["metadata"]["namespace"],
                uid=item["metadata"]["uid"],
                ready=item.get("state") == "SANDBOX_READY",
            )
            for item in reply.get("items") or []
        ]

    def status_info(self) -> dict[str, Any]:
        """`crictl info`: the verbose CRI Status (containerd's config under "config")."""
        return json.loads(self._run(["crictl", "info"]))

    def remove_all_sandboxes(self) -> list[str]:
        ids = self._run(["crictl", "pods", "--quiet"]).decode().split()
        if ids:
            # stopp first: it tears the network down through CNI; rmp then deletes the containers.
            self._run(["crictl", "stopp", *ids], timeout=180)
            self._run(["crictl", "rmp", *ids], timeout=180)
        return ids

    def container_annotations(self, container_id: str) -> dict[str, str]:
        """`crictl inspect`: the CRI ContainerStatus (its status.annotations)."""
        reply = json.loads(self._run(["crictl", "inspect", container_id]))
        return dict((reply.get("status") or {}).get("annotations") or {})

    def container_pid(self, container_id: str) -> int:
        """`crictl inspect`: the verbose info's pid."""
        reply = json.loads(self._run(["crictl", "inspect", container_id]))
        return pid_of(reply.get("info") or {}, container_id)


def pid_of(info: dict[str, Any], container_id: str) -> int:
    """The main process's pid in a verbose CRI ContainerStatus info (containerd: {"info": "{... "pid": N}"},
    pkg/cri/server/container_status.go toCRIContainerInfo; crictl inspect decodes it already)."""
    value = info.get("info", info)
    decoded = json.loads(value) if isinstance(value, str) else value
    pid = (decoded or {}).get("pid")
    if not isinstance(pid, int) or pid <= 0:
        raise ConformanceError(f"the runtime reports no running process for container {container_id} (pid {pid!r})")
    return pid


def cdi_support(info: dict[str, Any], runtime: str = "the runtime") -> tuple[bool, str]:
    """(CDI on, why) from verbose CRI Status info: containerd 1.7+ reports `enableCDI` in its "config"
    (on by default in 2.x); a runtime whose config has no such key (containerd 1.6) has no CDI at all."""
    config = info.get("config")
    if not isinstance(config, dict):
        return False, f"{runtime}: CRI Status info has no JSON 'config'"
    if "enableCDI" not in config:
        return False, f"{runtime}: its CRI config has no enableCDI setting (no CDI support)"
    enabled = config["enableCDI"] is True
    return enabled, f"{runtime}: CRI config enableCDI={str(config['enableCDI']).lower()}"
