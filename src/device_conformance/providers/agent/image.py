"""The node agent's image, built locally (no registry): busybox-static (nsenter, wget, sh) plus the agent
binary (agent.go, CGO_ENABLED=0). Cached by content under the cache's images/node-agent/.

A user of a real cluster loads the tarball into every node named by --allow-node-disruption
(`ctr -n k8s.io images import TARBALL`, `kind load image-archive TARBALL`), or pushes it to a registry the
nodes pull from and passes --node-agent-image.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from device_conformance.core.errors import BadInput
from device_conformance.host.process import run
from device_conformance.toolchain.go_tmpdir import which_go
from device_conformance.toolchain.images.build import BUSYBOX, Image
from device_conformance.toolchain.images.oci import Layer, write_oci_tarball

SOURCE = Path(__file__).with_name("agent.go")
# Bump when the image's recipe (not agent.go, which is hashed) changes.
RECIPE = "1"
BINARY = "/usr/bin/dc-node-agent"
IMAGE_REPOSITORY = "device-conformance.local/node-agent"
GO_MOD = "module dcnodeagent\n\ngo 1.22\n"


def image_key(source: bytes, busybox: bytes) -> str:
    """The image's tag: its inputs' content (agent source, busybox, recipe)."""
    digest = hashlib.sha256()
    for part in (RECIPE.encode(), source, busybox):
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:12]


def default_image_name() -> str:
    """The name of the image `agent_image` builds from this checkout (what --node-agent-image defaults to)."""
    return f"{IMAGE_REPOSITORY}:{image_key(SOURCE.read_bytes(), _busybox())}"


def agent_image(cache_dir: Path) -> Image:
    """Build (or reuse) the agent image's OCI tarball under cache_dir."""
    source, busybox = SOURCE.read_bytes(), _busybox()
    key = image_key(source, busybox)
    name = f"{IMAGE_REPOSITORY}:{key}"
    cache_dir.mkdir(parents=True, exist_ok=True)
    tarball = cache_dir / f"node-agent-{key}.oci.tar"
    if tarball.exists():
        return Image(name, tarball)
    binary = _build(source)
    applets = run([str(BUSYBOX), "--list"]).stdout.split()
    layer = Layer(
        files={"/bin/busybox": (busybox, 0o755), BINARY: (binary, 0o755)},
        symlinks={f"/bin/{applet}": "busybox" for applet in applets if applet != "busybox"},
        directories={"/bin": 0o755, "/usr": 0o755, "/usr/bin": 0o755, "/tmp": 0o1777},
    )
    partial = tarball.with_suffix(".partial")
    write_oci_tarball(partial, name, layer, entrypoint=[BINARY])
    partial.replace(tarball)
    for older in cache_dir.glob("node-agent-*.oci.tar"):
        if older != tarball:  # an earlier recipe's or agent.go's: never used again
            older.unlink(missing_ok=True)
    return Image(name, tarball)


def _busybox() -> bytes:
    if not BUSYBOX.exists():
        raise BadInput(f"{BUSYBOX} is missing (the node agent's image needs it)", "apt-get install -y busybox-static")
    return BUSYBOX.read_bytes()


def _build(source: bytes) -> bytes:
    go = which_go()
    if go is None:
        raise BadInput(
            "no Go toolchain on PATH to build the node agent (agent.go, standard library only)",
            "install Go >= 1.22 (https://go.dev/dl), or build its image elsewhere and pass --node-agent-image",
        )
    with tempfile.TemporaryDirectory(prefix="dc-node-agent-") as work:
        Path(work, "go.mod").write_text(GO_MOD)
        Path(work, "agent.go").write_bytes(source)
        run(
            [go, "build", "-trimpath", "-ldflags=-s -w", "-o", "dc-node-agent", "."],
            cwd=work,
            env={"CGO_ENABLED": "0", "GOOS": "linux", "GOFLAGS": "-mod=mod"},
        )
        return Path(work, "dc-node-agent").read_bytes()
