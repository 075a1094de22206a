"""toolchain/images/oci.py: the OCI image layout we write for node images."""

import hashlib
import io
import json
import tarfile

from device_conformance.toolchain.images.oci import Layer, write_oci_tarball


def test_oci_tarball_is_a_valid_deterministic_layout(tmp_path):
    layer = Layer(files={"/bin/tool": (b"binary", 0o755)}, symlinks={"/bin/sh": "tool"}, directories={"/bin": 0o755})
    first, second = tmp_path / "a.tar", tmp_path / "b.tar"
    write_oci_tarball(first, "example.local/img:v1", layer, cmd=["/bin/sh"])
    write_oci_tarball(second, "example.local/img:v1", layer, cmd=["/bin/sh"])
    assert first.read_bytes() == second.read_bytes()
    with tarfile.open(first) as tar:
        index = json.load(tar.extractfile("index.json"))
        manifest_desc = index["manifests"][0]
        assert manifest_desc["annotations"]["io.containerd.image.name"] == "example.local/img:v1"
        manifest_blob = tar.extractfile("blobs/sha256/" + manifest_desc["digest"][7:]).read()
        assert hashlib.sha256(manifest_blob).hexdigest() == manifest_desc["digest"][7:]
        manifest = json.loads(manifest_blob)
        layer_blob = tar.extractfile("blobs/sha256/" + manifest["layers"][0]["digest"][7:]).read()
        config = json.load(tar.extractfile("blobs/sha256/" + manifest["config"]["digest"][7:]))
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(layer_blob).hexdigest()]
    assert config["config"]["Cmd"] == ["/bin/sh"]
    with tarfile.open(fileobj=io.BytesIO(layer_blob)) as inner:
        assert inner.getmember("bin/sh").linkname == "tool"
        assert inner.extractfile("bin/tool").read() == b"binary"
