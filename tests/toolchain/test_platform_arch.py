"""The host's architecture (toolchain/platform_arch.py) and the places that follow it: the release site's
download path, the OCI image configs we write, the node root's multiarch library directory."""

import json
import tarfile
import urllib.error

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.expectations.versions import KubeVersion
from device_conformance.toolchain import binaries, module_proxy, platform_arch
from device_conformance.toolchain.images.oci import Layer, write_oci_tarball
from device_conformance.toolchain.nodeimage.assemble import image_config
from device_conformance.toolchain.nodeimage.images import xtables_modules


@pytest.mark.parametrize(
    ("machine", "arch", "triplet"),
    [
        ("x86_64", "amd64", "x86_64-linux-gnu"),
        ("AMD64", "amd64", "x86_64-linux-gnu"),
        ("aarch64", "arm64", "aarch64-linux-gnu"),
        ("arm64", "arm64", "aarch64-linux-gnu"),
    ],
)
def test_machine_names_map_to_goarch_and_triplet(machine, arch, triplet):
    assert platform_arch.go_arch(machine) == arch
    assert platform_arch.gnu_triplet(machine) == triplet


@pytest.mark.parametrize("machine", ["riscv64", "ppc64le", "s390x", "i686", "armv7l", ""])
def test_other_machines_are_bad_input_naming_the_supported_ones(machine):
    with pytest.raises(BadInput) as caught:
        platform_arch.go_arch(machine)
    assert repr(machine) in caught.value.problem
    assert "linux/amd64" in caught.value.problem and "linux/arm64" in caught.value.problem
    assert "x86_64" in caught.value.fix and "aarch64" in caught.value.fix


def test_the_host_is_asked_when_no_machine_is_given(monkeypatch):
    monkeypatch.setattr(platform_arch.platform, "machine", lambda: "aarch64")
    assert platform_arch.go_arch() == "arm64"
    assert xtables_modules() == "/usr/lib/aarch64-linux-gnu/xtables"
    monkeypatch.setattr(platform_arch.platform, "machine", lambda: "mips")
    with pytest.raises(BadInput):
        platform_arch.go_arch()


def test_release_downloads_take_the_hosts_directory(monkeypatch, tmp_path):
    monkeypatch.setattr(platform_arch.platform, "machine", lambda: "aarch64")
    asked = []

    def refuse(url, timeout):
        asked.append(url)
        raise urllib.error.URLError("offline")

    monkeypatch.setattr(binaries.urllib.request, "urlopen", refuse)
    assert not binaries._download_release(KubeVersion.parse("1.36.0"), tmp_path, ["kubelet"], lambda _: None)
    assert asked == ["https://dl.k8s.io/v1.36.0/bin/linux/arm64/kubelet.sha256"]

    heads = []
    module_proxy.release_site_serves(KubeVersion.parse("1.36.0"), lambda method, url: heads.append(url) or (404, ""))
    assert heads == ["https://dl.k8s.io/v1.36.0/bin/linux/arm64/kubelet.sha256"]


def _config(tarball):
    with tarfile.open(tarball) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest = json.load(tar.extractfile("blobs/sha256/" + index["manifests"][0]["digest"][7:]))
        return json.load(tar.extractfile("blobs/sha256/" + manifest["config"]["digest"][7:]))


def test_image_configs_name_the_given_or_the_hosts_architecture(monkeypatch, tmp_path):
    layer = Layer(files={"/bin/tool": (b"binary", 0o755)})
    write_oci_tarball(tmp_path / "arm.tar", "example.local/img:v1", layer, arch="arm64")
    assert _config(tmp_path / "arm.tar")["architecture"] == "arm64"
    write_oci_tarball(tmp_path / "host.tar", "example.local/img:v1", layer)
    assert _config(tmp_path / "host.tar")["architecture"] == platform_arch.go_arch()
    assert image_config("sha256:00", arch="arm64")["architecture"] == "arm64"
    monkeypatch.setattr(platform_arch.platform, "machine", lambda: "x86_64")
    assert image_config("sha256:00")["architecture"] == "amd64"
    monkeypatch.setattr(platform_arch.platform, "machine", lambda: "aarch64")
    assert image_config("sha256:00")["architecture"] == "arm64"
