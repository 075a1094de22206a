"""Write an OCI image layout tarball (oci-layout, index.json, blobs/sha256/...) from a file list.

Output is deterministic (fixed mtimes, sorted entries), so the same inputs give the same digest and a
cached tarball can be reused by name.
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from device_conformance.toolchain.platform_arch import go_arch


@dataclass
class Layer:
    """Files of a single layer: regular files (bytes, mode), symlinks and directories."""

    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    symlinks: dict[str, str] = field(default_factory=dict)
    directories: dict[str, int] = field(default_factory=dict)

    def tar_bytes(self) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path, mode in sorted(self.directories.items()):
                tar.addfile(_info(path, tarfile.DIRTYPE, mode))
            for path, (data, mode) in sorted(self.files.items()):
                info = _info(path, tarfile.REGTYPE, mode)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            for path, target in sorted(self.symlinks.items()):
                info = _info(path, tarfile.SYMTYPE, 0o777)
                info.linkname = target
                tar.addfile(info)
        return buffer.getvalue()


def _info(path: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(path.lstrip("/"))
    info.type = kind
    info.mode = mode
    info.mtime = 0
    info.uname = info.gname = "root"
    return info


def _descriptor(media_type: str, data: bytes) -> dict:
    return {
        "mediaType": media_type,
        "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
        "size": len(data),
    }


def write_oci_tarball(
    target: Path,
    name: str,
    layer: Layer,
    *,
    entrypoint: list[str] | None = None,
    cmd: list[str] | None = None,
    arch: str | None = None,
) -> None:
    """Write `target` as an OCI layout tar holding one linux/`arch` image tagged `name` (`arch`: a GOARCH,
    the host's when None, as the binaries in `layer` are)."""
    layer_blob = layer.tar_bytes()
    diff_id = "sha256:" + hashlib.sha256(layer_blob).hexdigest()
    image_config: dict = {"Env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if entrypoint:
        image_config["Entrypoint"] = entrypoint
    if cmd:
        image_config["Cmd"] = cmd
    config_blob = _json(
        {
            "architecture": arch or go_arch(),
            "os": "linux",
            "config": image_config,
            "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        }
    )
    manifest_blob = _json(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": _descriptor("application/vnd.oci.image.config.v1+json", config_blob),
            "layers": [_descriptor("application/vnd.oci.image.layer.v1.tar", layer_blob)],
        }
    )
    manifest = _descriptor("application/vnd.oci.image.manifest.v1+json", manifest_blob)
    manifest["annotations"] = {
        "io.containerd.image.name": name,
        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
    }
    index = _json({"schemaVersion": 2, "manifests": [manifest]})
    entries = {"oci-layout": _json({"imageLayoutVersion": "1.0.0"}), "index.json": index}
    for blob in (layer_blob, config_blob, manifest_blob):
        entries["blobs/sha256/" + hashlib.sha256(blob).hexdigest()] = blob
    partial = target.with_suffix(".partial")
    with tarfile.open(partial, "w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            tar.addfile(_info(directory, tarfile.DIRTYPE, 0o755))
        for path, data in entries.items():
            info = _info(path, tarfile.REGTYPE, 0o644)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    partial.rename(target)


def _json(value: dict) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
