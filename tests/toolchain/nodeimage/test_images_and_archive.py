"""Image helpers (kubeadm's list, symlink chains in the node root, ldd output) and the docker archive."""

from __future__ import annotations

import hashlib
import json
import os
import tarfile

import pytest

from device_conformance.core.errors import ConformanceError
from device_conformance.toolchain.images.oci import Layer
from device_conformance.toolchain.nodeimage import assemble, components, images
from device_conformance.toolchain.nodeimage.cache import content_key

KUBEADM_1_37_1 = [
    "registry.k8s.io/kube-apiserver:v1.37.1",
    "registry.k8s.io/kube-controller-manager:v1.37.1",
    "registry.k8s.io/kube-scheduler:v1.37.1",
    "registry.k8s.io/kube-proxy:v1.37.1",
    "registry.k8s.io/coredns/coredns:v1.14.6",
    "registry.k8s.io/pause:3.10.2",
    "registry.k8s.io/etcd:3.7.0-0",
]


def test_kubeadms_image_list_is_read_from_its_output(tmp_path):
    kubeadm = tmp_path / "kubeadm"
    kubeadm.write_text("#!/bin/sh\necho 'I1123 some log line'\nprintf '%s\\n' " + " ".join(KUBEADM_1_37_1) + "\n")
    kubeadm.chmod(0o755)
    assert images.kubeadm_images(kubeadm, "v1.37.1") == KUBEADM_1_37_1


def test_images_are_found_by_repository_and_etcd_tags_give_the_release():
    assert images.image_by_repository(KUBEADM_1_37_1, "coredns") == "registry.k8s.io/coredns/coredns:v1.14.6"
    assert images.tag_of(images.image_by_repository(KUBEADM_1_37_1, "etcd")) == "3.7.0-0"
    assert images.etcd_release("3.7.0-0") == "v3.7.0"
    assert images.etcd_release("3.5.21-0") == "v3.5.21"
    # The repository's last path element, exactly: not a suffix of another name.
    assert (
        images.image_by_repository([*KUBEADM_1_37_1, "example.com/not-etcd:1"], "etcd")
        == "registry.k8s.io/etcd:3.7.0-0"
    )
    with pytest.raises(ConformanceError, match="0 kube-dns images"):
        images.image_by_repository(KUBEADM_1_37_1, "kube-dns")


def test_a_symlink_chain_is_followed_inside_the_root_never_outside(tmp_path):
    root = tmp_path / "root"
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    (root / "usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2").write_bytes(b"loader")
    os.symlink("usr/lib", root / "lib")
    (root / "usr/lib64").mkdir()
    os.symlink("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", root / "usr/lib64/ld-linux-x86-64.so.2")
    os.symlink("usr/lib64", root / "lib64")
    links, real = images.resolve_chain(root, "/lib64/ld-linux-x86-64.so.2")
    assert links == [
        ("/lib64", "usr/lib64"),
        ("/usr/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
        ("/lib", "usr/lib"),
    ]
    assert real == "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    layer = Layer()
    images.add_from_root(layer, root, "/lib64/ld-linux-x86-64.so.2")
    assert layer.files == {"/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2": (b"loader", 0o644)}
    assert layer.symlinks == dict(links)


def test_ldd_output_gives_the_library_paths():
    text = (
        "\tlinux-vdso.so.1 (0x00007ffd5d3f2000)\n"
        "\tlibresolv.so.2 => /lib/x86_64-linux-gnu/libresolv.so.2 (0x00007f0c1c5d4000)\n"
        "\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0c1c3f3000)\n"
        "\t/lib64/ld-linux-x86-64.so.2 (0x00007f0c1c5f7000)\n"
    )
    assert images.parse_ldd(text) == [
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/lib/x86_64-linux-gnu/libresolv.so.2",
        "/lib64/ld-linux-x86-64.so.2",
    ]


def test_cri_base_spec_gets_kinds_hook_and_loses_rlimits():
    spec = {"process": {"args": ["sh"], "rlimits": [{"type": "RLIMIT_NOFILE"}]}, "hooks": {}}
    patched = assemble.patch_cri_base(spec)
    assert patched["hooks"] == {"createContainer": [{"path": "/kind/bin/mount-product-files.sh"}]}
    assert patched["process"] == {"args": ["sh"]}


def test_the_docker_archive_names_the_image_and_its_layer_digest(tmp_path):
    root = tmp_path / "root"
    (root / "kind").mkdir(parents=True)
    (root / "kind/version").write_text("v1.37.1")
    (root / "dev").mkdir()
    (root / "dev/null-ish").write_text("not in the image")
    target = tmp_path / "image.tar"
    diff_id = assemble.write_docker_archive(root, target, "device-conformance.local/kind-node:v1.37.1", print)
    with tarfile.open(target) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))
        assert manifest[0]["RepoTags"] == ["device-conformance.local/kind-node:v1.37.1"]
        layer = tar.extractfile(manifest[0]["Layers"][0]).read()
        config = json.load(tar.extractfile(manifest[0]["Config"]))
        index = json.load(tar.extractfile("index.json"))
    assert "sha256:" + hashlib.sha256(layer).hexdigest() == diff_id == config["rootfs"]["diff_ids"][0]
    assert config["config"]["Entrypoint"] == ["/usr/local/bin/entrypoint", "/sbin/init"]
    assert config["config"]["StopSignal"] == "SIGRTMIN+3"
    assert "container=docker" in config["config"]["Env"]
    assert (
        index["manifests"][0]["annotations"]["io.containerd.image.name"] == "device-conformance.local/kind-node:v1.37.1"
    )
    with tarfile.open(fileobj=__import__("io").BytesIO(layer)) as inner:
        names = sorted(inner.getnames())
    assert names == [".", "./dev", "./kind", "./kind/version"]


def test_content_keys_change_with_any_input():
    inputs = {"kubernetes": "v1.37.1", "binaries": {"kubelet": "aa"}}
    assert content_key(inputs) == content_key(dict(reversed(list(inputs.items()))))
    assert content_key(inputs) != content_key({**inputs, "binaries": {"kubelet": "ab"}})


def test_coredns_is_built_with_kubeadms_plugins_and_its_entry_follows_the_list(monkeypatch):
    program = components.coredns_program("v1.14.6")
    assert '_ "github.com/coredns/coredns/plugin/kubernetes"' in program.main_go
    assert program.gomod().splitlines()[-1] == "require github.com/coredns/coredns v1.14.6"
    before = components.program_dir(program)
    monkeypatch.setattr(components, "COREDNS_PLUGINS", (*components.COREDNS_PLUGINS, "rewrite"))
    assert components.program_dir(components.coredns_program("v1.14.6")) != before


def test_etcd_and_cni_programs_build_the_module_main_packages():
    assert components.etcd_program("v3.7.0").packages == ("go.etcd.io/etcd/server/v3",)
    cni = components.cni_program("v1.9.1", {"ptp": "plugins/main/ptp", "host-local": "plugins/ipam/host-local"})
    assert cni.outputs == ("host-local", "ptp")
    assert cni.packages == (
        "github.com/containernetworking/plugins/plugins/ipam/host-local",
        "github.com/containernetworking/plugins/plugins/main/ptp",
    )


def test_a_rebuild_prunes_older_images_of_the_same_name_only(tmp_path):
    def entry(key, name):
        (tmp_path / key).mkdir()
        (tmp_path / key / "inputs.json").write_text(json.dumps({"name": name}))
        return tmp_path / key

    keep = entry("new", "dc/kind-node:v1.37.1")
    old = entry("old", "dc/kind-node:v1.37.1")
    other = entry("other", "dc/kind-node:v1.36.4")
    (tmp_path / "old2.partial-12").mkdir()
    removed = assemble.prune_superseded(keep, "dc/kind-node:v1.37.1", lambda _: None)
    assert removed == [old]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "old2.partial-12", "other"]
    assert other.exists()


def test_a_build_without_root_is_refused_before_anything_is_fetched(monkeypatch):
    from device_conformance.core.errors import BadInput
    from device_conformance.expectations.versions import KubeVersion

    monkeypatch.setattr(assemble.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(assemble.kindbase, "base_recipe", lambda *a: pytest.fail("fetched the kind module"))
    with pytest.raises(BadInput, match=r"needs root .*\n  fix: run it as root"):
        assemble.build_node_image(KubeVersion(1, 37, 1), progress=lambda _: None)
