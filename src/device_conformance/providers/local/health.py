"""Health endpoints of the components (plain HTTPS/HTTP GETs; no Kubernetes client needed)."""

from __future__ import annotations

import ssl
import urllib.request
from pathlib import Path

from device_conformance.providers.local.pki import Pki


def _insecure() -> ssl.SSLContext:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def get(url: str, pki: Pki | None = None, client: str = "admin", timeout: float = 2, verify: bool = True) -> str:
    """GET url; with pki, present the client certificate `client` and (verify) check the server against our
    CA. verify=False for a component that serves a self-signed certificate (kube-controller-manager without
    --tls-cert-file) but still authenticates its clients."""
    context = None
    if url.startswith("https"):
        if pki is None:
            context = _insecure()
        else:
            context = ssl.create_default_context(cafile=str(pki.ca)) if verify else _insecure()
            context.load_cert_chain(str(pki.cert(client)), str(pki.key(client)))
    with urllib.request.urlopen(url, timeout=timeout, context=context) as reply:
        return reply.read().decode()


def ok(url: str, pki: Pki | None = None) -> bool:
    try:
        return get(url, pki).strip() == "ok"
    except OSError:
        return False


def etcd_healthy(port: int) -> bool:
    try:
        return '"health":"true"' in get(f"http://127.0.0.1:{port}/health").replace(" ", "")
    except OSError:
        return False


def socket_exists(path: Path) -> bool:
    return path.is_socket()
