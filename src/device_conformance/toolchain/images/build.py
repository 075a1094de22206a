"""The two images every cluster needs, built locally: the sandbox (pause) image and a workload image.

No registry is reachable, so pods use these with imagePullPolicy: Never.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.host.process import run
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


# A subject's image (--vendor-daemonset upstream:<name> on kind): its binary and the shared
# libraries it links (a cgo build of upstream's sample device plugin needs libc and the loader).
SUBJECT_RECIPE = "1"


def shared_libraries(ldd_output: str) -> list[str]:
    """Absolute paths of the libraries `ldd BINARY` lists (the vDSO has none; a static binary lists none)."""
    paths = []
    for line in ldd_output.splitlines():
        words = line.split()
        if "=>" in words:
            target = words[words.index("=>") + 1]
            if target.startswith("/"):
                paths.append(target)
        elif words and words[0].startswith("/"):
            paths.append(words[0])
    return paths


def subject_image(binary: Path, name: str, cache_dir: Path) -> Image:
    """An image `name` holding `binary` as /usr/bin/<its name> (the entrypoint) and its shared libraries at
    their host paths; cached by the binary's content."""
    import hashlib

    data = binary.read_bytes()
    key = hashlib.sha256(data + SUBJECT_RECIPE.encode() + name.encode()).hexdigest()[:16]
    cache_dir.mkdir(parents=True, exist_ok=True)
    tarball = cache_dir / f"{binary.name}-{key}.oci.tar"
    if tarball.exists():
        return Image(name, tarball)
    ldd = run(["ldd", str(binary)], check=False)
    libraries = shared_libraries(ldd.stdout)
    files = {f"/usr/bin/{binary.name}": (data, 0o755)}
    for library in libraries:
        files[library] = (Path(library).read_bytes(), 0o755)  # follows the symlink: the real library's bytes
    directories = {"/tmp": 0o1777}
    for path in files:
        parent = Path(path).parent
        while str(parent) != "/":
            directories.setdefault(str(parent), 0o755)
            parent = parent.parent
    layer = Layer(files=files, directories=directories)
    partial = tarball.with_suffix(".partial")
    write_oci_tarball(partial, name, layer, entrypoint=[f"/usr/bin/{binary.name}"])
    partial.replace(tarball)
    return Image(name, tarball)
