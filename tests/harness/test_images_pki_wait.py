import hashlib
import io
import json
import tarfile

import pytest
from cryptography import x509

from device_conformance.errors import WaitTimeout
from device_conformance.providers.local.pki import generate_pki
from device_conformance.toolchain.images.oci import Layer, write_oci_tarball
from device_conformance.wait.core import Abort, Pending, stays, until


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


def test_pki_issues_node_identity_and_apiserver_sans(tmp_path):
    pki = generate_pki(tmp_path, "dc-r1")
    kubelet = x509.load_pem_x509_certificate(pki.cert("kubelet").read_bytes())
    assert kubelet.subject.rfc4514_string() == "CN=system:node:dc-r1,O=system:nodes"
    apiserver = x509.load_pem_x509_certificate(pki.cert("apiserver").read_bytes())
    sans = apiserver.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert "localhost" in sans.get_values_for_type(x509.DNSName)
    ca = x509.load_pem_x509_certificate(pki.ca.read_bytes())
    assert apiserver.issuer == ca.subject
    assert (pki.key("admin").stat().st_mode & 0o777) == 0o600
    assert pki.service_account_public_key.read_text().startswith("-----BEGIN PUBLIC KEY-----")


def test_until_returns_the_first_value():
    values = iter([None, Pending("warming up"), 42])
    assert until(lambda: next(values), what="the answer", timeout=5, interval=0.01) == 42


def test_until_timeout_says_what_was_awaited_and_last_seen():
    with pytest.raises(WaitTimeout) as excinfo:
        until(lambda: Pending("allocatable=0"), what="allocatable to reach 2", timeout=0.3, interval=0.05)
    message = str(excinfo.value)
    assert "allocatable to reach 2" in message and "last seen: allocatable=0" in message


def test_until_stops_at_once_on_abort():
    def probe():
        raise Abort("the process died")

    with pytest.raises(Abort):
        until(probe, what="never", timeout=30)


def test_stays_reports_what_broke_the_condition():
    with pytest.raises(AssertionError, match="capacity dropped"):
        stays(lambda: "capacity dropped", what="capacity 2", duration=1, interval=0.01)
    stays(lambda: None, what="capacity 2", duration=0.05, interval=0.01)
