"""providers/local/pki.py: the local cluster's certificates."""

from cryptography import x509

from device_conformance.providers.local.pki import generate_pki


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
