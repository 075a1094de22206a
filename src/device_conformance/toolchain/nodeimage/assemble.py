"""`build_node_image`: every piece of a kind node image, put together and written as a tarball that
`docker load -i` accepts, cached by a hash of all its inputs.

The layout follows kind v0.33.0: its base image (images/base/Dockerfile: packages, files/, enabled
units, /etc/containerd/cri-base.json) and its node-image build (pkg/build/nodeimage/buildcontext.go:
kubelet, kubeadm, kubectl in /usr/bin, /kind/version, /kind/manifests/*, images preloaded in containerd).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.expectations.kind import KIND_INSTALL_VERSION
from device_conformance.expectations.versions import KubeVersion
from device_conformance.host.process import run
from device_conformance.toolchain import binaries as k8s
from device_conformance.toolchain.cache import MANIFEST, BinarySet, Progress, ensure_cached, has_manifest, sha256
from device_conformance.toolchain.containerd import DEFAULT_VERSION as CONTAINERD_VERSION
from device_conformance.toolchain.containerd import ensure_containerd
from device_conformance.toolchain.images import build as workload
from device_conformance.toolchain.nodeimage import components, images, kindbase, manifests, rootfs
from device_conformance.toolchain.nodeimage.cache import entry, record_inputs
from device_conformance.toolchain.platform_arch import go_arch

# Bump when what the steps below put in the image changes, so cached images are rebuilt.
RECIPE = "2"
TARBALL = "image.tar"
CONTENTS = "contents.json"
DEFAULT_NAME = "device-conformance.local/kind-node:{tag}"
# kind's base Dockerfile: ENV container=docker, STOPSIGNAL SIGRTMIN+3, ENTRYPOINT; systemctl enable/mask lines.
ENTRYPOINT = ["/usr/local/bin/entrypoint", "/sbin/init"]
ENABLE = ("kubelet.service", "containerd.service", "undo-mount-hacks.service")
MASK = ("systemd-binfmt.service",)
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
PACK_REPORT_SECONDS = 15


@dataclass(frozen=True)
class NodeImage:
    name: str
    tarball: Path
    source: str  # "cache" or "built"
    key: str
    preloaded: tuple[str, ...]


def default_name(version: KubeVersion) -> str:
    return DEFAULT_NAME.format(tag=version.tag)


def build_node_image(
    version: KubeVersion,
    *,
    name: str | None = None,
    k8s_bin_dir: Path | None = None,
    kind_version: str = KIND_INSTALL_VERSION,
    progress: Progress = print,
) -> NodeImage:
    """The node image of `version` (built, or taken from the cache when no input changed)."""
    if os.geteuid() != 0:
        raise BadInput(
            "building a kind node image needs root (debootstrap, chroot, and a containerd writing the node's store)",
            "run it as root (sudo), or use a published image: --kind-image kindest/node:vX.Y.Z",
        )
    name = name or default_name(version)
    started = time.monotonic()
    steps = Steps(progress, 8)
    # Kubernetes first: a wrong version or --k8s-bin-dir is refused before anything else is fetched or built.
    steps.next(f"Kubernetes {version.tag} binaries")
    server = k8s.ensure_binaries(version, user_dir=k8s_bin_dir, progress=progress)
    node_tools = k8s.ensure_binaries(version, components=k8s.NODE_IMAGE_COMPONENTS, progress=progress)
    steps.next(f"kind {kind_version} base recipe (Go module {kindbase.KIND_MODULE})")
    recipe = kindbase.base_recipe(kind_version)
    steps.next(f"Debian {recipe.debian_suite} root filesystem")
    rootfs_tar = rootfs.ensure_rootfs(recipe, progress)
    steps.next(f"containerd {CONTAINERD_VERSION} and CNI plugins {recipe.versions['CNI_PLUGINS_VERSION']}")
    containerd = ensure_containerd(CONTAINERD_VERSION, progress=progress)
    cni = components.ensure_program(
        components.cni_program(recipe.versions["CNI_PLUGINS_VERSION"], recipe.cni_plugins), progress
    )
    wanted = images.kubeadm_images(node_tools.path("kubeadm"), version.tag)
    etcd_tag = images.tag_of(images.image_by_repository(wanted, "etcd"))
    coredns_tag = images.tag_of(images.image_by_repository(wanted, "coredns"))
    steps.next(f"etcd {images.etcd_release(etcd_tag)} and CoreDNS {coredns_tag}")
    etcd = components.ensure_program(components.etcd_program(images.etcd_release(etcd_tag)), progress)
    coredns = components.ensure_program(components.coredns_program(coredns_tag), progress)

    base_config = (recipe.files / "etc/containerd/config.toml").read_text()
    inputs = {
        "recipe": RECIPE,
        "name": name,
        "kubernetes": version.tag,
        "kind": kind_version,
        "rootfs": _sums(rootfs_tar.parent, [rootfs.TARBALL]),
        "kubernetes-server": _sums(server.directory, k8s.COMPONENTS),
        "kubernetes-node": _sums(node_tools.directory, k8s.NODE_IMAGE_COMPONENTS),
        "containerd": _sums(containerd.directory, ("containerd", "containerd-shim-runc-v2", "ctr")),
        "cni": _sums(cni.directory, sorted(recipe.cni_plugins)),
        "etcd": _sums(etcd.directory, ("etcd",)),
        "coredns": _sums(coredns.directory, ("coredns",)),
        "kubeadm-images": wanted,
        "manifests": hashlib.sha256(
            (manifests.cni_manifest_text() + manifests.storage_manifest_text()).encode()
        ).hexdigest(),
        "busybox": sha256(workload.BUSYBOX),
        "workload-recipe": workload.RECIPE,
        "pause.c": hashlib.sha256(Path(workload.__file__).with_name("pause.c").read_bytes()).hexdigest(),
    }
    cached = entry("image", inputs)
    steps.next(f"node image {name} (cache key {cached.name})")
    if has_manifest(cached, [TARBALL]):  # complete entries only appear by rename
        source = "cache"
    else:

        def fill(staging: Path) -> str:
            root = staging / "root"
            root.mkdir()
            progress(f"  unpacking the root filesystem into {root}")
            run(["tar", "--numeric-owner", "-xpf", str(rootfs_tar), "-C", str(root)], timeout=1800)
            _lay_out(root, recipe, version, server, node_tools, containerd, cni, base_config, progress)
            steps.next("images preloaded in the node's containerd (namespace k8s.io)")
            wanted_preloads = _build_images(
                staging / "oci", root, wanted, server, node_tools, etcd, coredns, base_config, progress
            )
            listed = images.preload(root, containerd.directory, wanted_preloads, progress)
            (staging / CONTENTS).write_text(json.dumps({"preloaded": listed}, indent=1) + "\n")
            shutil.rmtree(staging / "oci")
            steps.next(f"packing {name} into {staging / TARBALL}")
            write_docker_archive(root, staging / TARBALL, name, progress)
            shutil.rmtree(root)
            record_inputs(staging, inputs)
            return "built"

        source = ensure_cached(cached, [TARBALL], fill, progress)
        if source != "cache":
            prune_superseded(cached, name, progress)
    preloaded = tuple(json.loads((cached / CONTENTS).read_text())["preloaded"])
    progress(
        f"node image {name}: {source} in {time.monotonic() - started:.0f}s, {cached / TARBALL} "
        f"({(cached / TARBALL).stat().st_size >> 20} MiB); load it with: docker load -i {cached / TARBALL}"
    )
    return NodeImage(name, cached / TARBALL, source, cached.name, preloaded)


def prune_superseded(keep: Path, name: str, progress: Progress) -> list[Path]:
    """Remove the cached images of the same name other than `keep` (about 1 GiB each): a rebuild supersedes
    them. Entries being written (`*.partial-*`) and other names are left alone."""
    removed = []
    for other in sorted(keep.parent.iterdir()):
        if other == keep or ".partial-" in other.name or not other.is_dir():
            continue
        try:
            recorded = json.loads((other / "inputs.json").read_text()).get("name")
        except (OSError, ValueError):
            continue
        if recorded == name:
            shutil.rmtree(other, ignore_errors=True)
            removed.append(other)
            progress(f"  removed the superseded image entry {other}")
    return removed


class Steps:
    """`[n/total] what` progress lines."""

    def __init__(self, progress: Progress, total: int) -> None:
        self.progress, self.total, self.done = progress, total, 0

    def next(self, what: str) -> None:
        self.done += 1
        self.progress(f"[{self.done}/{self.total}] {what}")


def _sums(directory: Path, names: list[str] | tuple[str, ...]) -> dict[str, str]:
    """The recorded sha256 of `names` in a cache entry (its manifest), or computed (a user's directory)."""
    try:
        recorded = json.loads((directory / MANIFEST).read_text())
    except (OSError, ValueError):
        recorded = {}
    return {name: recorded.get(name) or sha256(directory / name) for name in names}


def _install(source: Path, target: Path, mode: int = 0o755) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    target.chmod(mode)


def _lay_out(
    root: Path,
    recipe: kindbase.BaseRecipe,
    version: KubeVersion,
    server: BinarySet,
    node_tools: BinarySet,
    containerd: BinarySet,
    cni: BinarySet,
    base_config: str,
    progress: Progress,
) -> None:
    progress(f"  kind's base files ({recipe.files}), containerd, runc, CNI plugins, kubelet, kubeadm, kubectl")
    kindbase.install_base_files(recipe.files, root)
    for unit in ENABLE:
        run(["chroot", str(root), "systemctl", "enable", unit], timeout=120)
    for unit in MASK:
        run(["chroot", str(root), "systemctl", "mask", unit], timeout=120)
    (root / "etc/kubernetes/manifests").mkdir(parents=True, exist_ok=True)
    for binary in ("containerd", "ctr", "containerd-shim-runc-v2"):
        _install(containerd.path(binary), root / "usr/local/bin" / binary)
    (root / "etc/containerd/config.toml").write_text(kindbase.enable_cdi(base_config))
    (root / "etc/containerd/cri-base.json").write_text(
        json.dumps(cri_base_spec(containerd.path("ctr")), indent=4) + "\n"
    )
    for plugin in recipe.cni_plugins:
        _install(cni.path(plugin), root / "opt/cni/bin" / plugin)
    _install(server.path("kubelet"), root / "usr/bin/kubelet")
    for tool in ("kubeadm", "kubectl"):
        _install(node_tools.path(tool), root / "usr/bin" / tool)
    (root / "kind/version").write_text(version.tag)
    (root / "kind/manifests").mkdir(parents=True, exist_ok=True)
    (root / "kind/manifests/default-cni.yaml").write_text(manifests.cni_manifest_text())
    (root / "kind/manifests/default-storage.yaml").write_text(manifests.storage_manifest_text())


def cri_base_spec(ctr: Path) -> dict:
    """kind's /etc/containerd/cri-base.json: `ctr oci spec` with the product_uuid hook added and the
    rlimits removed (its base Dockerfile, `build` stage, done with jq there)."""
    spec = json.loads(run([str(ctr), "oci", "spec"], timeout=60).stdout)
    return patch_cri_base(spec)


def patch_cri_base(spec: dict) -> dict:
    hooks = spec.setdefault("hooks", {}).setdefault("createContainer", [])
    hooks.append({"path": "/kind/bin/mount-product-files.sh"})
    spec.get("process", {}).pop("rlimits", None)
    return spec


def _build_images(
    directory: Path,
    root: Path,
    wanted: list[str],
    server: BinarySet,
    node_tools: BinarySet,
    etcd: BinarySet,
    coredns: BinarySet,
    base_config: str,
    progress: Progress,
) -> list[images.Preload]:
    """The OCI images of the node, each with every name it must answer to."""
    directory.mkdir()
    progress(f"  building the images kubeadm asks for: {', '.join(wanted)}")
    preloads = []
    for component in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
        ref = images.image_by_repository(wanted, component)
        layer = images.binary_layer(root, {f"/usr/local/bin/{component}": server.path(component)})
        preloads.append(images.Preload((ref,), images.write_image(directory, ref, layer)))
    ref = images.image_by_repository(wanted, "kube-proxy")
    layer = images.kube_proxy_layer(root, node_tools.path("kube-proxy"))
    preloads.append(images.Preload((ref,), images.write_image(directory, ref, layer)))
    ref = images.image_by_repository(wanted, "etcd")
    layer = images.binary_layer(root, {"/usr/local/bin/etcd": etcd.path("etcd")})
    preloads.append(images.Preload((ref,), images.write_image(directory, ref, layer)))
    ref = images.image_by_repository(wanted, "coredns")
    layer = images.binary_layer(root, {"/coredns": coredns.path("coredns")})
    preloads.append(images.Preload((ref,), images.write_image(directory, ref, layer, entrypoint=["/coredns"])))
    # One pause image under kubeadm's name, the sandbox name kind's containerd config pins, and the suite's.
    pause, busybox_image = workload.build_images(directory / "workload")
    pause_names = dict.fromkeys(
        (workload.PAUSE_IMAGE, images.image_by_repository(wanted, "pause"), kindbase.sandbox_image(base_config))
    )
    preloads.append(images.Preload(tuple(pause_names), pause.tarball))
    preloads.append(images.Preload((busybox_image.name,), busybox_image.tarball))
    busybox = images.require_busybox(workload.BUSYBOX)
    layer = images.busybox_layer(busybox)
    layer.files["/bin/kubectl"] = (node_tools.path("kubectl").read_bytes(), 0o755)
    for library in images.shared_libraries(root, node_tools.path("kubectl")):
        images.add_from_root(layer, root, library)
    preloads.append(images.Preload((manifests.CNI_IMAGE,), images.write_image(directory, manifests.CNI_IMAGE, layer)))
    return preloads


def image_config(diff_id: str, arch: str | None = None) -> dict:
    """The image config: kind's ENV container=docker, STOPSIGNAL and ENTRYPOINT (base Dockerfile); `arch`
    (a GOARCH) the host's when None, as the node's root and binaries are."""
    return {
        "architecture": arch or go_arch(),
        "os": "linux",
        "config": {
            "Env": ["container=docker", f"PATH={PATH}"],
            "Entrypoint": ENTRYPOINT,
            "StopSignal": "SIGRTMIN+3",
        },
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "device-conformance kind build-node-image (toolchain/nodeimage)"}],
    }


def write_docker_archive(root: Path, target: Path, name: str, progress: Progress) -> str:
    """Write `root` as a one-layer image tarball (docker-archive: manifest.json, config, layer; plus an OCI
    index) that `docker load` takes. Returns the layer's diff_id."""
    layer_path = target.with_name("layer.tar")
    digest = hashlib.sha256()
    argv = ["tar", "--numeric-owner", "--xattrs", "--xattrs-include=security.capability", "--sort=name",
            "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*", "--exclude=./tmp/*",
            "-C", str(root), "-cf", "-", "."]  # fmt: skip
    started = last = time.monotonic()
    written = 0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc, layer_path.open("wb") as out:
        assert proc.stdout is not None
        for block in iter(lambda: proc.stdout.read(1 << 20), b""):  # type: ignore[union-attr]
            digest.update(block)
            out.write(block)
            written += len(block)
            if time.monotonic() - last >= PACK_REPORT_SECONDS:
                last = time.monotonic()
                progress(f"  packed {written >> 20} MiB in {last - started:.0f}s")
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise ConformanceError(f"tar of the node root failed (exit {proc.returncode}): {stderr[-2000:]}")
    diff_id = "sha256:" + digest.hexdigest()
    config = json.dumps(image_config(diff_id), sort_keys=True).encode()
    config_digest = hashlib.sha256(config).hexdigest()
    layer_name = f"blobs/sha256/{digest.hexdigest()}"
    manifest = [{"Config": f"blobs/sha256/{config_digest}", "RepoTags": [name], "Layers": [layer_name]}]
    oci_manifest = json.dumps({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json", "digest": f"sha256:{config_digest}",
            "size": len(config),
        },
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": diff_id, "size": written}],
    }, sort_keys=True).encode()  # fmt: skip
    oci_digest = hashlib.sha256(oci_manifest).hexdigest()
    index = {
        "schemaVersion": 2,
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": f"sha256:{oci_digest}",
            "size": len(oci_manifest),
            "annotations": {
                "io.containerd.image.name": name, "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1],
            },
        }],
    }  # fmt: skip
    small = {
        "oci-layout": json.dumps({"imageLayoutVersion": "1.0.0"}).encode(),
        "index.json": json.dumps(index, sort_keys=True).encode(),
        "manifest.json": json.dumps(manifest).encode(),
        f"blobs/sha256/{config_digest}": config,
        f"blobs/sha256/{oci_digest}": oci_manifest,
    }
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o755
            tar.addfile(info)
        for path, data in small.items():
            info = tarfile.TarInfo(path)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        tar.add(layer_path, arcname=layer_name)
    layer_path.unlink()
    return diff_id
