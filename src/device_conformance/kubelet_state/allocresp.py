"""``AllocResp`` of a device-manager checkpoint entry: protobuf ``v1beta1.ContainerAllocateResponse``.

Read and written with the generated message (protos/deviceplugin/v1beta1, from upstream's
staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto) behind plain dataclasses.

The kubelet writes this with gogo's generated Marshal up to 1.33 and with google.golang.org/protobuf's
proto.Marshal from 1.34 (pkg/kubelet/cm/devicemanager/pod_devices.go): fields in number order, map entries
with key and value even when empty, the entries of a map in Go's random map order (gogo's sortkeys is used
only by String()). So a map of more than one key has no single kubelet encoding; ours is protobuf's
deterministic one, stable from run to run. Reading follows proto.Unmarshal (1.34+): a known field of the
wrong wire type is kept as an unknown field, and a string that is not UTF-8 fails. One difference from
every kubelet: a map entry that carries an unknown field is dropped (upb keeps it as an unknown field of
the message), where Go keeps its key and value.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from google.protobuf.message import DecodeError

from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb


@dataclass
class Mount:
    container_path: str = ""
    host_path: str = ""
    read_only: bool = False


@dataclass
class DeviceSpec:
    container_path: str = ""
    host_path: str = ""
    permissions: str = ""


@dataclass
class ContainerAllocateResponse:
    """envs=1, mounts=2, devices=3, annotations=4, cdi_devices=5 (CDIDevice.name=1)."""

    envs: dict[str, str] = field(default_factory=dict)
    mounts: list[Mount] = field(default_factory=list)
    devices: list[DeviceSpec] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: list[str] = field(default_factory=list)


class ProtoError(ValueError):
    """AllocResp bytes that do not decode; the kubelet skips such an entry."""


def decode_alloc_resp(data: bytes | None) -> ContainerAllocateResponse:
    """Decode AllocResp bytes (None/empty decode to an empty response, as in Go); unknown fields are skipped."""
    message = pb.ContainerAllocateResponse()
    try:
        message.ParseFromString(data or b"")
    except DecodeError as exc:
        raise ProtoError(str(exc)) from None
    return ContainerAllocateResponse(
        envs=dict(message.envs),
        mounts=[Mount(m.container_path, m.host_path, m.read_only) for m in message.mounts],
        devices=[DeviceSpec(d.container_path, d.host_path, d.permissions) for d in message.devices],
        annotations=dict(message.annotations),
        cdi_devices=[c.name for c in message.cdi_devices],
    )


def encode_alloc_resp(resp: ContainerAllocateResponse) -> bytes:
    """`resp` as the kubelet writes it; map entries in one fixed order (upb sorts by key, a key that is a
    prefix of another after it: upb/message/internal/map_sorter.c, _upb_mapsorter_cmpstr)."""
    message = pb.ContainerAllocateResponse(
        envs=resp.envs,
        mounts=[
            pb.Mount(container_path=m.container_path, host_path=m.host_path, read_only=m.read_only) for m in resp.mounts
        ],
        devices=[
            pb.DeviceSpec(container_path=d.container_path, host_path=d.host_path, permissions=d.permissions)
            for d in resp.devices
        ],
        annotations=resp.annotations,
        cdi_devices=[pb.CDIDevice(name=name) for name in resp.cdi_devices],
    )
    return message.SerializeToString(deterministic=True)
