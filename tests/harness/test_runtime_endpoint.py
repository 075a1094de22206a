"""The node seam a CRI proxy needs (NodeControl.runtime_socket / set_runtime_endpoint): what each provider writes
so that the kubelet's next start uses another CRI endpoint, and the error where a provider cannot."""

from pathlib import Path

import pytest
import yaml

from device_conformance.errors import BadInput
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.base import NodeControl
from device_conformance.providers.kind.node import RUNTIME_ENDPOINT_DROPIN, KindTransport
from device_conformance.providers.local import configs
from device_conformance.providers.local.ports import Ports

ENDPOINT = "unix:///var/lib/kubelet/plugins/dc-cri-1234abcd.sock"


def _kubelet_config(**kwargs) -> dict:
    text = configs.kubelet_config(
        "10.90.0.1",
        Ports.from_base(21000),
        Path("/r/ca.crt"),
        Path("/r/c.sock"),
        "/dc-r1",
        settings_for(KubeVersion(1, 37, 2)),
        **kwargs,
    )
    return yaml.safe_load(text)


def test_the_local_kubelet_config_names_the_endpoint_given_else_containerd():
    assert _kubelet_config()["containerRuntimeEndpoint"] == "unix:///r/c.sock"
    assert _kubelet_config(runtime_endpoint=ENDPOINT)["containerRuntimeEndpoint"] == ENDPOINT
    assert "imageServiceEndpoint" not in _kubelet_config(runtime_endpoint=ENDPOINT)  # images through it too


def test_kind_writes_a_runtime_drop_in_and_removes_it_each_with_a_daemon_reload():
    transport = KindTransport(docker=None, container="dc-kind-worker", mounts={})
    ran: list[tuple[list[str], bytes | None]] = []
    transport.run = lambda argv, *, stdin=None, check=True, timeout=120: ran.append((list(argv), stdin)) or b""

    transport.set_runtime_endpoint(ENDPOINT)
    transport.set_runtime_endpoint(None)

    assert [argv for argv, _ in ran] == [
        ["mkdir", "-p", "/run/systemd/system/kubelet.service.d"],
        ["sh", "-c", 'cat > "$1"', "sh", RUNTIME_ENDPOINT_DROPIN],
        ["systemctl", "daemon-reload"],
        ["rm", "-f", RUNTIME_ENDPOINT_DROPIN],
        ["systemctl", "daemon-reload"],
    ]
    assert (
        ran[1][1] == (f'[Service]\nEnvironment="KUBELET_EXTRA_ARGS=--container-runtime-endpoint={ENDPOINT}"\n').encode()
    )


class _BareTransport:
    """A provider's transport without the runtime seam (an existing cluster's node agent)."""

    name = "node-a"
    mounts: dict = {}
    kubelet_service = None


def test_a_provider_without_the_seam_is_refused_naming_the_providers_that_have_it():
    node = NodeControl(_BareTransport())
    with pytest.raises(BadInput, match=r"(?s)cannot reach the container runtime of node node-a.*local or the kind"):
        node.runtime_socket()
    with pytest.raises(BadInput, match=r"(?s)cannot point its kubelet at another.*local or the kind provider"):
        node.set_runtime_endpoint(ENDPOINT)
