"""kind's base recipe read from its Dockerfile, its files laid out, the containerd config with CDI."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.toolchain.nodeimage import kindbase, rootfs

# The shape of sigs.k8s.io/kind v0.33.0 images/base/Dockerfile, shortened.
DOCKERFILE = """ARG BASE_IMAGE=debian:trixie-slim
FROM $BASE_IMAGE AS base
RUN chmod 755 /kind /kind/bin && \\
    echo "Installing Packages ..." \\
    && DEBIAN_FRONTEND=noninteractive clean-install \\
      systemd \\
      conntrack iptables nftables \\
      bash ca-certificates curl jq procps \\
    && find /lib/systemd/system/sysinit.target.wants/ -name "systemd-tmpfiles-setup.service" -delete
FROM go-build AS build-containerd
ARG CONTAINERD_VERSION="v2.3.4"
ARG RUNC_VERSION="v1.4.3"
FROM go-build AS build-cni
ARG CNI_PLUGINS_VERSION="v1.9.1"
RUN clean-install git make \\
    && go build -o ./bin/host-local -mod=vendor ./plugins/ipam/host-local \\
    && go build -o ./bin/ptp -mod=vendor ./plugins/main/ptp \\
"""

CONFIG = """version = 2

[plugins."io.containerd.grpc.v1.cri".containerd]
  snapshotter = "overlayfs"

[plugins."io.containerd.grpc.v1.cri"]
  # use fixed sandbox image
  sandbox_image = "registry.k8s.io/pause:3.10"
  restrict_oom_score_adj = false
"""


def test_the_dockerfile_gives_suite_packages_versions_and_cni_plugins():
    suite, packages, versions, cni = kindbase.parse_dockerfile(DOCKERFILE)
    assert suite == "trixie"
    assert packages == (
        "systemd",
        "conntrack",
        "iptables",
        "nftables",
        "bash",
        "ca-certificates",
        "curl",
        "jq",
        "procps",
    )
    assert versions == {"CONTAINERD_VERSION": "v2.3.4", "RUNC_VERSION": "v1.4.3", "CNI_PLUGINS_VERSION": "v1.9.1"}
    assert cni == {"host-local": "plugins/ipam/host-local", "ptp": "plugins/main/ptp"}


def test_a_dockerfile_without_a_debian_base_is_refused():
    with pytest.raises(BadInput, match="BASE_IMAGE=debian"):
        kindbase.parse_dockerfile(DOCKERFILE.replace("debian:trixie-slim", "ubuntu:24.04"))


def test_base_files_get_the_modes_of_the_dockerfile_copy_lines(tmp_path):
    files, root = tmp_path / "files", tmp_path / "root"
    for path in ("usr/local/bin/entrypoint", "kind/bin/mount-product-files.sh", "kind/README.txt", "etc/crictl.yaml"):
        (files / path).parent.mkdir(parents=True, exist_ok=True)
        (files / path).write_text(path)
    written = kindbase.install_base_files(files, root)
    modes = {path: (root / path).stat().st_mode & 0o777 for path in written}
    assert modes == {
        "etc/crictl.yaml": 0o644,
        "kind/README.txt": 0o644,
        "kind/bin/mount-product-files.sh": 0o755,
        "usr/local/bin/entrypoint": 0o755,
    }
    assert (root / "kind/bin").stat().st_mode & 0o777 == 0o755


def test_cdi_is_switched_on_in_the_cri_table_and_the_rest_is_kept():
    patched = tomllib.loads(kindbase.enable_cdi(CONFIG))
    cri = patched["plugins"]["io.containerd.grpc.v1.cri"]
    assert cri["enable_cdi"] is True
    assert cri["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10"
    assert cri["containerd"] == {"snapshotter": "overlayfs"}
    assert kindbase.enable_cdi(kindbase.enable_cdi(CONFIG)) == kindbase.enable_cdi(CONFIG)


def test_a_config_without_the_cri_table_is_refused():
    with pytest.raises(BadInput, match=r"io\.containerd\.grpc\.v1\.cri"):
        kindbase.enable_cdi("version = 2\n")


def test_the_sandbox_image_is_read_from_the_config():
    assert kindbase.sandbox_image(CONFIG) == "registry.k8s.io/pause:3.10"


def test_the_rootfs_key_covers_kinds_packages_and_runc(tmp_path):
    recipe = kindbase.BaseRecipe("v0.33.0", "trixie", ("systemd", "bash"), {}, {}, tmp_path)
    inputs = rootfs.rootfs_inputs(recipe)
    assert inputs["packages"] == ["bash", "runc", "systemd"]
    assert inputs["suite"] == "trixie"


def test_mounts_left_below_a_root_are_unmounted_deepest_first(tmp_path):
    import os
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    outer, inner = tmp_path / "root" / "proc", tmp_path / "root" / "proc" / "sys"
    outer.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(outer)], check=True)
    inner.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(inner)], check=True)
    try:
        assert rootfs.unmount_under(tmp_path / "root") == [str(inner), str(outer)]
        mounted = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        assert [m for m in mounted if m.startswith(str(tmp_path))] == []
    finally:
        subprocess.run(["umount", "-l", str(inner)], check=False, capture_output=True)
        subprocess.run(["umount", "-l", str(outer)], check=False, capture_output=True)
