"""Client for the kubelet's podresources API v1 (what the node says each container was given).

The kubelet serves it on /var/lib/kubelet/pod-resources/kubelet.sock. Answers come back as plain
frozen dataclasses so suites compare them without touching protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import Message

from device_conformance.core.errors import ConformanceError
from device_conformance.protos.podresources.v1 import api_pb2 as pb
from device_conformance.protos.podresources.v1 import api_pb2_grpc as pb_grpc

DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"


class PodResourcesError(ConformanceError):
    """A podresources call failed; `code` is the gRPC status (e.g. NOT_FOUND, UNIMPLEMENTED)."""

    def __init__(self, call: str, socket_path: str, err: grpc.RpcError) -> None:
        self.code: grpc.StatusCode = err.code()
        self.details: str = err.details() or ""
        super().__init__(f"podresources {call} on {socket_path} failed: {self.code.name}: {self.details}")


@dataclass(frozen=True)
class Devices:
    resource_name: str
    device_ids: tuple[str, ...]
    numa_nodes: tuple[int, ...] = ()


@dataclass(frozen=True)
class Memory:
    memory_type: str
    size: int
    numa_nodes: tuple[int, ...] = ()


@dataclass(frozen=True)
class ClaimResource:
    driver_name: str
    pool_name: str
    device_name: str
    cdi_devices: tuple[str, ...] = ()
    share_id: str | None = None


@dataclass(frozen=True)
class DynamicResource:
    claim_name: str
    claim_namespace: str
    claim_resources: tuple[ClaimResource, ...] = ()


def _by_resource(devices: tuple[Devices, ...]) -> dict[str, list[str]]:
    """Resource -> its device IDs, each once: the kubelet lists a device with a topology once per NUMA node it is on
    (pkg/kubelet/cm/container_manager.go containerDevicesFromResourceDeviceInstances), so a plugin reporting a device
    on two NUMA nodes would otherwise show it twice (`devices` keeps every entry with its node)."""
    listed: dict[str, list[str]] = {}
    for entry in devices:
        listed.setdefault(entry.resource_name, []).extend(entry.device_ids)
    return {resource: list(dict.fromkeys(ids)) for resource, ids in listed.items()}


@dataclass(frozen=True)
class ContainerResources:
    name: str
    devices: tuple[Devices, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[Memory, ...] = ()
    dynamic_resources: tuple[DynamicResource, ...] = ()

    @property
    def device_ids(self) -> dict[str, list[str]]:
        """resource name -> device IDs (entries of one resource are merged, order kept)."""
        return _by_resource(self.devices)


@dataclass(frozen=True)
class PodResources:
    name: str
    namespace: str
    containers: tuple[ContainerResources, ...] = ()

    def container(self, name: str) -> ContainerResources:
        for container in self.containers:
            if container.name == name:
                return container
        raise KeyError(
            f"pod {self.namespace}/{self.name} has no container {name!r} in podresources; "
            f"containers: {[c.name for c in self.containers]}"
        )


@dataclass(frozen=True)
class AllocatableResources:
    devices: tuple[Devices, ...] = ()
    cpu_ids: tuple[int, ...] = ()
    memory: tuple[Memory, ...] = ()

    @property
    def device_ids(self) -> dict[str, list[str]]:
        return _by_resource(self.devices)


def _numa(topology: pb.TopologyInfo) -> tuple[int, ...]:
    return tuple(node.ID for node in topology.nodes)


def _devices(items: list[pb.ContainerDevices]) -> tuple[Devices, ...]:
    return tuple(Devices(d.resource_name, tuple(d.device_ids), _numa(d.topology)) for d in items)


def _memory(items: list[pb.ContainerMemory]) -> tuple[Memory, ...]:
    return tuple(Memory(m.memory_type, m.size, _numa(m.topology)) for m in items)


def _claim(item: pb.ClaimResource) -> ClaimResource:
    share_id = item.share_id if item.HasField("share_id") else None
    cdi = tuple(c.name for c in item.cdi_devices)
    return ClaimResource(item.driver_name, item.pool_name, item.device_name, cdi, share_id)


def _pod(item: pb.PodResources) -> PodResources:
    containers = tuple(
        ContainerResources(
            name=c.name,
            devices=_devices(c.devices),
            cpu_ids=tuple(c.cpu_ids),
            memory=_memory(c.memory),
            dynamic_resources=tuple(
                DynamicResource(d.claim_name, d.claim_namespace, tuple(_claim(r) for r in d.claim_resources))
                for d in c.dynamic_resources
            ),
        )
        for c in item.containers
    )
    return PodResources(item.name, item.namespace, containers)


def _invoke(socket_path: str, call: str, request: Message, timeout: float) -> Any:
    with grpc.insecure_channel(f"unix://{socket_path}") as channel:
        try:
            return getattr(pb_grpc.PodResourcesListerStub(channel), call)(request, timeout=timeout)
        except grpc.RpcError as err:
            raise PodResourcesError(call, socket_path, err) from err


def list_pod_resources(socket_path: str = DEFAULT_SOCKET, *, timeout: float = 10.0) -> list[PodResources]:
    response = _invoke(socket_path, "List", pb.ListPodResourcesRequest(), timeout)
    return [_pod(p) for p in response.pod_resources]


def allocatable_resources(socket_path: str = DEFAULT_SOCKET, *, timeout: float = 10.0) -> AllocatableResources:
    response = _invoke(socket_path, "GetAllocatableResources", pb.AllocatableResourcesRequest(), timeout)
    return AllocatableResources(
        _devices(response.devices),
        tuple(response.cpu_ids),
        _memory(response.memory),
    )


def get_pod_resources(
    socket_path: str = DEFAULT_SOCKET, name: str = "", namespace: str = "default", *, timeout: float = 10.0
) -> PodResources:
    """One pod (needs the KubeletPodResourcesGet gate; NOT_FOUND for an unknown pod)."""
    request = pb.GetPodResourcesRequest(pod_name=name, pod_namespace=namespace)
    response = _invoke(socket_path, "Get", request, timeout)
    return _pod(response.pod_resources)


def find_pod(pods: list[PodResources], name: str, namespace: str) -> PodResources | None:
    return next((p for p in pods if p.name == name and p.namespace == namespace), None)
