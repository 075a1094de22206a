"""Where the plugin's defects that bend its answers are applied (their entries, `bends`: defect_registry.py);
each bends one answer, nothing else. Those that are faults from the start are preloaded into the fault table."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence

from device_conformance.fakes.common.panic import go_panic
from device_conformance.fakes.device_plugin.allocate import preferred as kubelet_order
from device_conformance.fakes.device_plugin.config import HOST_DEV_MOUNT, DeviceConfig, DevicePluginConfig
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb


def listed(
    config: DevicePluginConfig,
    devices: list[DeviceConfig],
    stream_number: int,
    handed_out: frozenset[str] = frozenset(),
) -> list[DeviceConfig]:
    """The device list one ListAndWatch stream sends (`handed_out`: the IDs Allocate answered so far)."""
    if "list-omits-allocated" in config.defects:
        devices = [d for d in devices if d.id not in handed_out]
    if "ids-change-per-start" in config.defects:
        devices = [dataclasses.replace(d, id=f"{d.id}-p{os.getpid()}") for d in devices]
    if "unstable-device-ids" in config.defects and stream_number > 1:
        devices = [dataclasses.replace(d, id=f"{d.id}-r{stream_number}") for d in devices]
    if "duplicate-device-ids" in config.defects and devices:
        devices = [*devices, devices[0]]
    return devices


def crash_on_unknown_ids(config: DevicePluginConfig, devices: list[DeviceConfig], request: pb.AllocateRequest) -> None:
    if "allocate-crash-on-unknown-id" not in config.defects:
        return
    known = {d.id for d in devices}
    unknown = sorted({i for r in request.container_requests for i in r.devices_ids} - known)
    if unknown:
        go_panic(f"Allocate: unknown device IDs {unknown} (defect allocate-crash-on-unknown-id)")


def _first_available(available: Sequence[str], must_include: Sequence[str], size: int) -> list[str]:
    return list(available)[:size]


def preferred(config: DevicePluginConfig) -> Callable[[Sequence[str], Sequence[str], int], list[str]]:
    if "preferred-ignores-must-include" in config.defects:
        return _first_available
    return functools.partial(kubelet_order, order=config.preferred_order)


def answered_containers(
    config: DevicePluginConfig, requests: list[pb.ContainerAllocateRequest]
) -> list[pb.ContainerAllocateRequest]:
    return requests[:1] if "allocate-first-container-only" in config.defects else requests


def refused_ids(config: DevicePluginConfig, handed_out: frozenset[str], request: pb.AllocateRequest) -> list[str]:
    """The requested IDs allocate-refuses-handed-out-id refuses: those an earlier Allocate handed out."""
    if "allocate-refuses-handed-out-id" not in config.defects:
        return []
    return sorted({i for r in request.container_requests for i in r.devices_ids} & handed_out)


def with_host_dev(config: DevicePluginConfig, response: pb.ContainerAllocateResponse) -> pb.ContainerAllocateResponse:
    """allocate-mounts-host-dev: the answer also mounts the node's /dev (read-only) at HOST_DEV_MOUNT."""
    if "allocate-mounts-host-dev" in config.defects:
        response.mounts.append(pb.Mount(container_path=HOST_DEV_MOUNT, host_path="/dev", read_only=True))
    return response
