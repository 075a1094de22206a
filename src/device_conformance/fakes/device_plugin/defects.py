"""The plugin-wide defective-vendor modes (config.DEFECTS): each bends one answer, nothing else."""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Sequence

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


def go_panic(message: str, frame: str) -> None:
    """Die as a Go program does on a panic: the message and the goroutine's trace on stderr, exit status 2."""
    print(f"panic: {message}\n\ngoroutine 1 [running]:\n{frame}", file=sys.stderr)
    sys.stderr.flush()
    os._exit(2)


def crash_on_options(config: DevicePluginConfig) -> None:
    # The panic a Go plugin's `return nil, nil` gives when gRPC marshals the reply (kubernetes#109016).
    if "options-crash" in config.defects:
        go_panic(
            "runtime error: invalid memory address or nil pointer dereference",
            "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1.(*DevicePluginOptions).Marshal(0x0) (defect options-crash)",
        )


def crash_on_register(config: DevicePluginConfig) -> None:
    if "register-crash" in config.defects:
        go_panic("assignment to entry in nil map", "main.(*plugin).Register(...) (defect register-crash)")


def crash_on_unknown_ids(config: DevicePluginConfig, devices: list[DeviceConfig], request: pb.AllocateRequest) -> None:
    if "allocate-crash-on-unknown-id" not in config.defects:
        return
    known = {d.id for d in devices}
    unknown = sorted({i for r in request.container_requests for i in r.devices_ids} - known)
    if unknown:
        print(f"panic: Allocate: unknown device IDs {unknown} (defect allocate-crash-on-unknown-id)", file=sys.stderr)
        sys.stderr.flush()
        os._exit(2)


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
