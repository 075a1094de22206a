"""Render the configured Allocate response for one container's device IDs.

Placeholders are replaced literally (no str.format) so values may contain other braces, e.g. JSON.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from device_conformance.fakes.device_plugin.config import RESPONSE_FIELDS, AllocateConfig
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb

_PER_DEVICE = ("{id}", "{index}")


def _fill(text: str, common: dict[str, str], per_device: dict[str, str] | None = None) -> str:
    for key, value in {**common, **(per_device or {})}.items():
        text = text.replace("{" + key + "}", value)
    return text


def _expand(texts: Sequence[str], ids: Sequence[str], resource: str) -> Iterator[list[str]]:
    """Yield the filled texts once, or once per device when any of them uses {id}/{index}."""
    common = {"ids": ",".join(ids), "count": str(len(ids)), "resource": resource}
    if any(marker in text for text in texts for marker in _PER_DEVICE):
        for index, device_id in enumerate(ids):
            yield [_fill(t, common, {"id": device_id, "index": str(index)}) for t in texts]
    else:
        yield [_fill(t, common) for t in texts]


def container_response(cfg: AllocateConfig, ids: Sequence[str], resource: str) -> pb.ContainerAllocateResponse:
    """The answer for one container request; a defective-vendor mode in cfg (drop, ids_override) bends it."""
    ids = cfg.ids_override or ids
    keep = {name: name not in cfg.drop for name in RESPONSE_FIELDS}
    resp = pb.ContainerAllocateResponse()
    for key, value in cfg.envs.items() if keep["envs"] else ():
        for k, v in _expand([key, value], ids, resource):
            resp.envs[k] = v
    for key, value in cfg.annotations.items() if keep["annotations"] else ():
        for k, v in _expand([key, value], ids, resource):
            resp.annotations[k] = v
    for mount in cfg.mounts if keep["mounts"] else ():
        for cpath, hpath in _expand([mount.container_path, mount.host_path], ids, resource):
            resp.mounts.append(pb.Mount(container_path=cpath, host_path=hpath, read_only=mount.read_only))
    for spec in cfg.devices if keep["devices"] else ():
        for cpath, hpath in _expand([spec.container_path, spec.host_path], ids, resource):
            resp.devices.append(pb.DeviceSpec(container_path=cpath, host_path=hpath, permissions=spec.permissions))
    for name in cfg.cdi_devices if keep["cdi_devices"] else ():
        for (filled,) in _expand([name], ids, resource):
            resp.cdi_devices.append(pb.CDIDevice(name=filled))
    return resp


def preferred(available: Sequence[str], must_include: Sequence[str], size: int, order: Sequence[str] = ()) -> list[str]:
    """The required devices first, then the available ones of `order` (the plugin's own preference, in
    that order), then the other available ones in the kubelet's order."""
    chosen = list(dict.fromkeys(must_include))
    offered = set(available)
    for device_id in [*(d for d in order if d in offered), *available]:
        if len(chosen) >= size:
            break
        if device_id not in chosen:
            chosen.append(device_id)
    return chosen[:size]
