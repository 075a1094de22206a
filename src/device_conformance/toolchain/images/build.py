"""The two images every cluster needs, built locally: the sandbox (pause) image and a workload image.

No registry is reachable, so pods use these with imagePullPolicy: Never.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from device_conformance.errors import BadInput
from device_conformance.process import run
from device_conformance.toolchain.images.oci import Layer, write_oci_tarball

PAUSE_IMAGE = "device-conformance.local/pause:v1"
WORKLOAD_IMAGE = "device-conformance.local/busybox:v1"
BUSYBOX = Path("/bin/busybox")
# Bump when the image content recipe changes, so cached tarballs are rebuilt.
RECIPE = "1"


@dataclass(frozen=True)
class Image:
    name: str
    tarball: Path


def build_images(cache_dir: Path) -> list[Image]:
    """Build (or reuse) the pause and workload image tarballs under cache_dir."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    return [_pause_image(cache_dir), _workload_image(cache_dir)]


def _pause_image(cache_dir: Path) -> Image:
    tarball = cache_dir / f"pause-{RECIPE}.oci.tar"
    if not tarball.exists():
        cc = shutil.which("gcc") or shutil.which("cc")
        if cc is None:
            raise BadInput("no C compiler to build the pause image", "apt-get install -y gcc libc6-dev")
        binary = cache_dir / "pause.bin"
        source = Path(__file__).with_name("pause.c")
        run([cc, "-static", "-Os", "-s", "-o", str(binary), str(source)])
        layer = Layer(files={"/pause": (binary.read_bytes(), 0o755)})
        write_oci_tarball(tarball, PAUSE_IMAGE, layer, entrypoint=["/pause"])
        binary.unlink()
    return Image(PAUSE_IMAGE, tarball)


def _workload_image(cache_dir: Path) -> Image:
    tarball = cache_dir / f"busybox-{RECIPE}.oci.tar"
    if not tarball.exists():
        if not BUSYBOX.exists():
            raise BadInput(f"{BUSYBOX} is missing (needed for the workload image)", "apt-get install -y busybox-static")
        applets = run([str(BUSYBOX), "--list"]).stdout.split()
        layer = Layer(
            files={
                "/bin/busybox": (BUSYBOX.read_bytes(), 0o755),
                "/etc/passwd": (
                    b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
                    0o644,
                ),
                "/etc/group": (b"root:x:0:\nnogroup:x:65534:\n", 0o644),
            },
            symlinks={f"/bin/{applet}": "busybox" for applet in applets if applet != "busybox"},
            directories={"/bin": 0o755, "/etc": 0o755, "/tmp": 0o1777, "/root": 0o700, "/var": 0o755},
        )
        write_oci_tarball(tarball, WORKLOAD_IMAGE, layer, cmd=["/bin/sh"])
    return Image(WORKLOAD_IMAGE, tarball)
