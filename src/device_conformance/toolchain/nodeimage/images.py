"""The OCI images a kind node starts with, built from local binaries and preloaded into the node's
containerd (namespace k8s.io) under the names kubeadm and the manifests ask for.

Each image is a static layer: the binary plus the files it needs taken from the node's Debian root
(its shared libraries when it is dynamically linked, iptables/nft/conntrack for kube-proxy), following
symlinks the way the loader would, so an image has the node's own glibc and no registry is involved.
Preloading is what kind's node-image build does (pkg/build/nodeimage/imageimporter.go): a containerd
whose root is the node's /var/lib/containerd, `ctr images import --no-unpack`, pinned for the kubelet's
image GC; containerd unpacks on first use.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.host.process import run, terminate
from device_conformance.toolchain.cache import Progress
from device_conformance.toolchain.images.oci import Layer, write_oci_tarball
from device_conformance.toolchain.platform_arch import gnu_triplet

NAMESPACE = "k8s.io"
# kind's importer labels every preloaded image pinned (imageimporter.go LoadCommand).
PINNED = "io.cri-containerd.pinned=pinned"
BASE_FILES = {
    "/etc/passwd": (
        b"root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n",
        0o644,
    ),
    "/etc/group": (b"root:x:0:\nnogroup:x:65534:\n", 0o644),
    "/etc/nsswitch.conf": (b"hosts: files dns\n", 0o644),
}
BASE_DIRECTORIES = {"/tmp": 0o1777, "/etc": 0o755, "/root": 0o700}
# kube-proxy execs these (k8s.io/kubernetes pkg/util/iptables, knftables, conntrack cleanup); Debian's
# iptables is the nft variant, and xtables-nft-multi answers to the plain names as well.
KUBE_PROXY_TOOLS = ("/usr/sbin/xtables-nft-multi", "/usr/sbin/nft", "/usr/sbin/conntrack")
XTABLES_NAMES = ("iptables", "iptables-save", "iptables-restore", "ip6tables", "ip6tables-save", "ip6tables-restore")
MAX_LINKS = 40
READY_TIMEOUT = 60


@dataclass(frozen=True)
class Preload:
    """One image tarball and every name it must have in the node (the first is the one it carries)."""

    names: tuple[str, ...]
    tarball: Path


def kubeadm_images(kubeadm: Path, version_tag: str) -> list[str]:
    """`kubeadm config images list --kubernetes-version vX.Y.Z`: the images kubeadm init will use."""
    out = run([str(kubeadm), "config", "images", "list", "--kubernetes-version", version_tag], timeout=120).stdout
    images = [line.strip() for line in out.splitlines() if re.match(r"^[a-z0-9.-]+/\S+:\S+$", line.strip())]
    if not images:
        raise ConformanceError(f"`kubeadm config images list` printed no images:\n{out}")
    return images


def image_by_repository(images: Sequence[str], repository: str) -> str:
    """The one of `images` whose repository ends with /`repository` (kube-apiserver, etcd, coredns, pause)."""
    found = [image for image in images if image.rsplit(":", 1)[0].rsplit("/", 1)[-1] == repository]
    if len(found) != 1:
        raise ConformanceError(f"kubeadm lists {len(found)} {repository} images in {list(images)}")
    return found[0]


def tag_of(image: str) -> str:
    return image.rsplit(":", 1)[1]


def etcd_release(tag: str) -> str:
    """The etcd release of kubeadm's etcd image tag (3.7.0-0 -> v3.7.0: the suffix is the image revision)."""
    match = re.match(r"^v?(\d+\.\d+\.\d+)(?:-\d+)?$", tag)
    if match is None:
        raise ConformanceError(f"cannot read an etcd release from the image tag {tag!r}")
    return "v" + match.group(1)


def resolve_chain(root: Path, path: str) -> tuple[list[tuple[str, str]], str]:
    """Resolve `path` inside `root` as the node would: (symlinks met on the way, as (path, target)), real path).

    Never leaves `root` (an absolute link target is taken from `root` too)."""
    links: list[tuple[str, str]] = []
    pending = list(PurePosixPath(path).parts[1:])
    current = PurePosixPath("/")
    while pending:
        part = pending.pop(0)
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        host = root / str(candidate).lstrip("/")
        if host.is_symlink():
            target = os.readlink(host)
            links.append((str(candidate), target))
            if len(links) > MAX_LINKS:
                raise ConformanceError(f"too many symlinks resolving {path} in {root}")
            # The target's parts replace this one; an absolute target restarts from the root's top.
            absolute = target.startswith("/")
            pending = list(PurePosixPath(target).parts[1 if absolute else 0 :]) + pending
            if absolute:
                current = PurePosixPath("/")
            continue
        current = candidate
    return links, str(current)


def add_from_root(layer: Layer, root: Path, path: str) -> None:
    """Put `path` of the node root into `layer`, with the symlinks leading to it."""
    links, real = resolve_chain(root, path)
    for link, target in links:
        layer.symlinks[link] = target
    host = root / real.lstrip("/")
    if not host.is_file():
        raise ConformanceError(f"{path} is not a file in the node root {root}")
    layer.files[real] = (host.read_bytes(), host.stat().st_mode & 0o7777)


def shared_libraries(root: Path, binary: Path) -> list[str]:
    """The shared objects `binary` loads, as paths in the node root (`ldd` in a chroot); [] when static."""
    inside = None
    if not str(binary).startswith(str(root) + "/"):
        handle, name = tempfile.mkstemp(prefix="dc-ldd-", dir=root / "tmp")
        os.close(handle)
        shutil.copyfile(binary, name)
        os.chmod(name, 0o755)
        inside = Path(name)
    try:
        target = "/" + str((inside or binary).relative_to(root))
        proc = run(["chroot", str(root), "ldd", target], check=False, timeout=60)
    finally:
        if inside is not None:
            inside.unlink()
    if "not a dynamic executable" in proc.stdout or "statically linked" in proc.stdout:
        return []
    if proc.returncode != 0:
        raise ConformanceError(f"ldd {binary} in the node root failed:\n{proc.stdout}")
    return parse_ldd(proc.stdout)


def parse_ldd(text: str) -> list[str]:
    """Library paths from ldd output (`libc.so.6 => /lib/.../libc.so.6 (0x..)`, `/lib64/ld-linux... (0x..)`)."""
    paths = []
    for line in text.splitlines():
        match = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x[0-9a-f]+\)", line)
        if match:
            paths.append(match.group(1))
    return sorted(set(paths))


def base_layer() -> Layer:
    return Layer(files=dict(BASE_FILES), directories=dict(BASE_DIRECTORIES))


def binary_layer(root: Path, binaries: dict[str, Path], tools: Sequence[str] = ()) -> Layer:
    """A base layer with `binaries` (image path -> local file), `tools` from the node root, and what
    they load from the node root."""
    layer = base_layer()
    for image_path, local in binaries.items():
        layer.files[image_path] = (local.read_bytes(), 0o755)
        for library in shared_libraries(root, local):
            add_from_root(layer, root, library)
    for tool in tools:
        add_from_root(layer, root, tool)
        _, real = resolve_chain(root, tool)
        for library in shared_libraries(root, root / real.lstrip("/")):
            add_from_root(layer, root, library)
    return layer


def kube_proxy_layer(root: Path, kube_proxy: Path) -> Layer:
    layer = binary_layer(root, {"/usr/local/bin/kube-proxy": kube_proxy}, KUBE_PROXY_TOOLS)
    for name in XTABLES_NAMES:
        layer.symlinks[f"/usr/sbin/{name}"] = "xtables-nft-multi"
    xtables = xtables_modules()
    for module in sorted((root / xtables.lstrip("/")).glob("*.so")):
        add_from_root(layer, root, f"{xtables}/{module.name}")
        for library in shared_libraries(root, module):
            add_from_root(layer, root, library)
    return layer


def xtables_modules(machine: str | None = None) -> str:
    """Debian's iptables extension directory in the node's root (of the host's architecture when None)."""
    return f"/usr/lib/{gnu_triplet(machine)}/xtables"


def busybox_layer(busybox: Path) -> Layer:
    """busybox with every applet linked (what toolchain/images/build.py's workload image has)."""
    applets = run([str(busybox), "--list"]).stdout.split()
    layer = base_layer()
    layer.files["/bin/busybox"] = (busybox.read_bytes(), 0o755)
    layer.symlinks.update({f"/bin/{applet}": "busybox" for applet in applets if applet != "busybox"})
    return layer


def write_image(directory: Path, name: str, layer: Layer, entrypoint: list[str] | None = None) -> Path:
    target = directory / (re.sub(r"[^A-Za-z0-9.-]+", "_", name) + ".oci.tar")
    write_oci_tarball(target, name, layer, entrypoint=entrypoint)
    return target


@contextmanager
def importer(root: Path, containerd_dir: Path) -> Iterator[list[str]]:
    """A containerd on this host whose root is the node's /var/lib/containerd (CRI, NRI off; own sockets
    and state under a temporary directory); yields the `ctr` argv prefix. Stopped and removed on exit."""
    state = Path(tempfile.mkdtemp(prefix="dcni-", dir="/tmp"))  # short: sun_path holds 107 bytes
    socket = state / "c.sock"
    config = state / "config.toml"
    config.write_text(
        "version = 3\n"
        f'root = "{root / "var/lib/containerd"}"\n'
        f'state = "{state / "state"}"\n'
        'disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images",\n'
        '  "io.containerd.cri.v1.runtime",\n'
        '  "io.containerd.nri.v1.nri", "io.containerd.podsandbox.controller.v1.podsandbox"]\n'
        f'[grpc]\n  address = "{socket}"\n'
        f'[ttrpc]\n  address = "{socket}.ttrpc"\n'
        '[debug]\n  address = ""\n[metrics]\n  address = ""\n'
        f'[plugins."io.containerd.internal.v1.opt"]\n  path = "{state / "opt"}"\n'
    )
    log = (state / "containerd.log").open("wb")
    process = subprocess.Popen(
        [str(containerd_dir / "containerd"), "--config", str(config)], stdout=log, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    log.close()
    ctr = [str(containerd_dir / "ctr"), "--address", str(socket), "--namespace", NAMESPACE]
    try:
        # A plain deadline loop: toolchain/ sits below wait/ in the package layers (pyproject's importlinter).
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            if process.poll() is not None:
                log_text = (state / "containerd.log").read_text()[-3000:]
                raise ConformanceError(f"the image-import containerd exited with {process.returncode}:\n{log_text}")
            said = "no socket yet"
            if socket.is_socket():
                probe = run([*ctr, "version"], check=False, timeout=30)
                if probe.returncode == 0:
                    break
                said = probe.stdout.strip()[-300:]
            if time.monotonic() > deadline:
                raise ConformanceError(f"the image-import containerd did not answer in {READY_TIMEOUT}s: {said}")
            time.sleep(0.2)
        yield ctr
    finally:
        if process.poll() is None:
            terminate(process.pid, grace=30, sig=signal.SIGTERM)
        process.wait(timeout=30)
        shutil.rmtree(state, ignore_errors=True)


def preload(root: Path, containerd_dir: Path, images: Sequence[Preload], progress: Progress) -> list[str]:
    """Import `images` into the node root's containerd store under all their names; returns the names
    containerd lists afterwards (checked: every wanted name is there)."""
    with importer(root, containerd_dir) as ctr:
        for image in images:
            progress(f"  preloading {', '.join(image.names)}")
            run(
                [*ctr, "images", "import", f"--label={PINNED}", "--all-platforms", "--no-unpack", str(image.tarball)],
                timeout=600,
            )
            for alias in image.names[1:]:
                run([*ctr, "images", "tag", "--force", image.names[0], alias], timeout=60)
                run([*ctr, "images", "label", alias, PINNED], timeout=60)
        # stdout only: ctr warns on stderr (e.g. cgroup v1 deprecation) and `run` merges the two.
        listed = subprocess.run(
            [*ctr, "images", "list", "-q"], capture_output=True, text=True, timeout=60, check=True
        ).stdout.split()
    missing = sorted({name for image in images for name in image.names} - set(listed))
    if missing:
        raise ConformanceError(f"images missing from the node's containerd after import: {missing} (listed: {listed})")
    return sorted(listed)


def require_busybox(busybox: Path) -> Path:
    if not busybox.exists():
        raise BadInput(
            f"{busybox} is missing (needed for the CNI and workload images)", "apt-get install -y busybox-static"
        )
    return busybox
