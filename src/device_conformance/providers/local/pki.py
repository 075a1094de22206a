"""Certificates and keys for a local cluster: one CA, serving and client certificates, SA key."""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)

# (file stem, common name, organisation) of each client identity the cluster needs.
CLIENTS = (
    ("admin", "device-conformance-admin", "system:masters"),
    ("controller-manager", "system:kube-controller-manager", None),
    ("scheduler", "system:kube-scheduler", None),
    ("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters"),
)


@dataclass(frozen=True)
class Pki:
    directory: Path

    def cert(self, stem: str) -> Path:
        return self.directory / f"{stem}.crt"

    def key(self, stem: str) -> Path:
        return self.directory / f"{stem}.key"

    @property
    def ca(self) -> Path:
        return self.cert("ca")

    @property
    def service_account_key(self) -> Path:
        return self.key("service-account")

    @property
    def service_account_public_key(self) -> Path:
        return self.directory / "service-account.pub"


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _name(common_name: str, organisation: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organisation:
        parts.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organisation))
    return x509.Name(parts)


def _builder(subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
    )


def generate_pki(directory: Path, node_name: str) -> Pki:
    """Write ca, apiserver serving, client and kubelet certificates plus the service-account key."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca_key = _new_key()
    ca_name = _name("device-conformance-ca")
    ca_cert = (
        _builder(ca_name, ca_name, ca_key.public_key())
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    _write_key(pki.key("ca"), ca_key)
    pki.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))

    def issue(stem: str, subject: x509.Name, usage: ExtendedKeyUsageOID, sans: list[x509.GeneralName]) -> None:
        key = _new_key()
        builder = _builder(subject, ca_name, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        _write_key(pki.key(stem), key)
        pki.cert(stem).write_bytes(builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM))

    issue(
        "apiserver",
        _name("kube-apiserver"),
        ExtendedKeyUsageOID.SERVER_AUTH,
        [x509.DNSName(n) for n in ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")]
        + [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", "10.0.0.1")],
    )
    for stem, common_name, organisation in CLIENTS:
        issue(stem, _name(common_name, organisation), ExtendedKeyUsageOID.CLIENT_AUTH, [])
    issue("kubelet", _name(f"system:node:{node_name}", "system:nodes"), ExtendedKeyUsageOID.CLIENT_AUTH, [])
    sa_key = _new_key()
    _write_key(pki.service_account_key, sa_key)
    pki.service_account_public_key.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pki


def write_kubeconfig(path: Path, server: str, pki: Pki, stem: str) -> Path:
    """A kubeconfig for identity `stem` that a user can also point kubectl at."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "device-conformance",
                "cluster": {"server": server, "certificate-authority": str(pki.ca)},
            }
        ],
        "users": [
            {
                "name": stem,
                "user": {"client-certificate": str(pki.cert(stem)), "client-key": str(pki.key(stem))},
            }
        ],
        "contexts": [{"name": "device-conformance", "context": {"cluster": "device-conformance", "user": stem}}],
        "current-context": "device-conformance",
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path
