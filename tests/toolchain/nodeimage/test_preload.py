"""Preloading into a node root's containerd store, with the real containerd the toolchain builds.

Skips (saying why) where that containerd is not cached or we are not root; no Docker, no cluster."""

from __future__ import annotations

import os
import subprocess

import pytest

from device_conformance.core.errors import ConformanceError
from device_conformance.toolchain.containerd import DEFAULT_VERSION, containerd_dir
from device_conformance.toolchain.images.oci import Layer, write_oci_tarball
from device_conformance.toolchain.nodeimage import images


@pytest.fixture
def containerd():
    directory = containerd_dir(DEFAULT_VERSION)
    if not (directory / "containerd").exists():
        pytest.skip(f"containerd {DEFAULT_VERSION} is not built (`device-conformance setup`)")
    if os.geteuid() != 0:
        pytest.skip("the import containerd runs as root")
    return directory


def _image(tmp_path, name):
    tarball = tmp_path / f"{name.rsplit('/', 1)[-1]}.tar"
    write_oci_tarball(tarball, name, Layer(files={"/hello": (name.encode(), 0o644)}))
    return tarball


def test_images_land_in_the_k8s_io_namespace_under_every_name_pinned(tmp_path, containerd):
    root = tmp_path / "root"
    (root / "var/lib").mkdir(parents=True)
    pause = _image(tmp_path, "device-conformance.local/pause:v1")
    busybox = _image(tmp_path, "device-conformance.local/busybox:v1")
    listed = images.preload(
        root,
        containerd,
        [
            images.Preload(("device-conformance.local/pause:v1", "registry.k8s.io/pause:3.10.2"), pause),
            images.Preload(("device-conformance.local/busybox:v1",), busybox),
        ],
        lambda _: None,
    )
    assert listed == [
        "device-conformance.local/busybox:v1",
        "device-conformance.local/pause:v1",
        "registry.k8s.io/pause:3.10.2",
    ]
    assert (root / "var/lib/containerd/io.containerd.metadata.v1.bolt/meta.db").is_file()
    # The throw-away containerd is gone, with its state directory.
    leftovers = subprocess.run(["pgrep", "-f", "containerd --config /tmp/dcni-"], capture_output=True, text=True)
    assert leftovers.stdout == ""


def test_a_name_missing_after_import_fails_the_build(tmp_path, containerd, monkeypatch):
    root = tmp_path / "root"
    (root / "var/lib").mkdir(parents=True)
    pause = _image(tmp_path, "device-conformance.local/pause:v1")
    real_run = images.run

    def no_tag(argv, **kwargs):  # `ctr images tag` (and the label of the alias) doing nothing
        if "tag" in argv or "label" in argv:
            return subprocess.CompletedProcess(argv, 0, "", "")
        return real_run(argv, **kwargs)

    monkeypatch.setattr(images, "run", no_tag)
    with pytest.raises(
        ConformanceError, match=r"missing from the node's containerd after import: \['registry.k8s.io/pause:3.10'\]"
    ):
        images.preload(
            root,
            containerd,
            [images.Preload(("device-conformance.local/pause:v1", "registry.k8s.io/pause:3.10"), pause)],
            lambda _: None,
        )
