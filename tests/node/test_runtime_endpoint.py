"""The node seam a CRI proxy needs (NodeControl.runtime_socket / set_runtime_endpoint): what each provider writes
so that the kubelet's next start uses another CRI endpoint, and the error where a provider cannot."""

import socket
from pathlib import Path

import pytest
import yaml

from device_conformance.core.errors import BadInput, CommandError, ConformanceError
from device_conformance.expectations.cluster import settings_for
from device_conformance.expectations.versions import KubeVersion
from device_conformance.node.base import NodeControl
from device_conformance.node.systemd import SystemdKubelet
from device_conformance.providers.kind.node import (
    RUNTIME_ENDPOINT_DROPIN,
    KindNode,
    KindTransport,
    runtime_dropin,
    unit_argv,
)
from device_conformance.providers.kind.provider import KindProvider
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


# kind's kubelet.service with 10-kubeadm.conf, as `systemctl show kubelet --property ExecStart --value` prints it.
KIND_EXEC_START = (
    "{ path=/usr/bin/kubelet ; argv[]=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS "
    "$KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS ; ignore_errors=no ; start_time=[n/a] ; stop_time=[n/a] ; pid=0 ; "
    "code=(null) ; status=0/0 }\n"
)
KIND_ARGV = "/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"


class _FakeNodeShell:
    """`docker exec` of a kind node: a drop-in file and the unit's ExecStart, every command recorded."""

    def __init__(self, dropin: str | None = None) -> None:
        self.dropin = dropin
        self.ran: list[tuple[list[str], bytes | None]] = []

    def __call__(self, argv, *, stdin=None, check=True, timeout=120) -> bytes:
        argv = list(argv)
        self.ran.append((argv, stdin))
        if argv[:2] == ["systemctl", "show"]:
            return KIND_EXEC_START.encode()
        if argv[:3] == ["sh", "-c", 'cat > "$1"']:
            self.dropin = stdin.decode()
        elif argv == ["rm", "-f", RUNTIME_ENDPOINT_DROPIN]:
            self.dropin = None
        elif argv[:2] == ["sh", "-c"] and argv[-1] == RUNTIME_ENDPOINT_DROPIN:  # cat "$1" || true
            return (self.dropin or "").encode()
        return b""

    def commands(self) -> list[list[str]]:
        return [argv for argv, _ in self.ran]


def _kind_transport(shell: _FakeNodeShell, mounts: dict | None = None) -> KindTransport:
    transport = KindTransport(docker=None, container="dc-kind-worker", mounts=mounts or {})
    transport.run = shell
    return transport


def test_kind_replaces_execstart_with_the_units_own_plus_the_endpoint_flag_and_removes_it_after():
    """Not Environment="KUBELET_EXTRA_ARGS=...": kind's /etc/default/kubelet (an EnvironmentFile=) sets that
    variable and wins over Environment= (seen on kind: the kubelet never called the proxy)."""
    shell = _FakeNodeShell()
    transport = _kind_transport(shell)

    transport.set_runtime_endpoint(ENDPOINT)
    assert shell.dropin == (
        f"# device-conformance CRI proxy endpoint: {ENDPOINT}\n[Service]\nExecStart=\n"
        f"ExecStart={KIND_ARGV} --container-runtime-endpoint={ENDPOINT}\n"
    )
    assert "Environment=" not in shell.dropin
    transport.set_runtime_endpoint(None)

    assert shell.dropin is None
    assert shell.commands() == [
        ["rm", "-f", RUNTIME_ENDPOINT_DROPIN],
        ["systemctl", "daemon-reload"],
        ["systemctl", "show", "kubelet", "--property", "ExecStart", "--value"],
        ["mkdir", "-p", "/run/systemd/system/kubelet.service.d"],
        ["sh", "-c", 'cat > "$1"', "sh", RUNTIME_ENDPOINT_DROPIN],
        ["systemctl", "daemon-reload"],
        ["rm", "-f", RUNTIME_ENDPOINT_DROPIN],
        ["rmdir", "--ignore-fail-on-non-empty", "/run/systemd/system/kubelet.service.d"],
        ["systemctl", "daemon-reload"],
    ]


def test_the_units_command_line_is_read_without_an_endpoint_flag_and_percent_escaped():
    ours = KIND_EXEC_START.replace(
        "$KUBELET_EXTRA_ARGS ;", f"$KUBELET_EXTRA_ARGS --container-runtime-endpoint={ENDPOINT} ;"
    )
    assert unit_argv(ours) == KIND_ARGV  # a drop-in of ours still in place: the flag is not doubled
    assert runtime_dropin("/k --name=a%b", ENDPOINT).splitlines()[-1] == (
        f"ExecStart=/k --name=a%%b --container-runtime-endpoint={ENDPOINT}"
    )
    for shown in ("", KIND_EXEC_START + KIND_EXEC_START):
        with pytest.raises(ConformanceError, match="ExecStart commands"):
            unit_argv(shown)


def _serving(path: Path) -> socket.socket:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(1)
    return server


def test_a_drop_in_whose_proxy_socket_nothing_serves_is_stale(tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    mounts = {"/var/lib/kubelet/plugins": plugins}
    shell = _FakeNodeShell()
    transport = _kind_transport(shell, mounts)
    assert transport.stale_runtime_endpoint() is None  # no drop-in

    transport.set_runtime_endpoint(ENDPOINT)
    assert transport.stale_runtime_endpoint() == ENDPOINT  # no socket at all

    (plugins / "dc-cri-1234abcd.sock").write_bytes(b"")  # a file left, nothing listening
    assert transport.stale_runtime_endpoint() == ENDPOINT
    (plugins / "dc-cri-1234abcd.sock").unlink()
    with _serving(plugins / "dc-cri-1234abcd.sock"):
        assert transport.stale_runtime_endpoint() is None  # a proxy serves: a run in progress, left alone

    unmapped = _kind_transport(_FakeNodeShell(runtime_dropin(KIND_ARGV, "unix:///run/elsewhere.sock")), mounts)
    assert unmapped.stale_runtime_endpoint() == "unix:///run/elsewhere.sock"  # no host proxy can serve it
    unmarked = _kind_transport(_FakeNodeShell("[Service]\nEnvironment=X=1\n"), mounts)
    assert unmarked.stale_runtime_endpoint() == "(unreadable)"


class _Kubelet:
    def __init__(self) -> None:
        self.restarts = 0

    def restart(self) -> None:
        self.restarts += 1


def _kind_node(shell: _FakeNodeShell, mounts: dict) -> KindNode:
    node = KindNode(docker=None, container="dc-kind-worker", mounts=mounts, k8s_version="1.37.2")
    node.transport.run = shell
    node.kubelet = _Kubelet()
    return node


def test_bring_up_of_a_reused_cluster_removes_a_stale_drop_in_and_restarts_the_kubelet(tmp_path):
    mounts = {"/var/lib/kubelet/plugins": tmp_path}
    stale = _kind_node(_FakeNodeShell(runtime_dropin(KIND_ARGV, ENDPOINT)), mounts)
    clean = _kind_node(_FakeNodeShell(), mounts)
    said: list[str] = []
    provider = KindProvider(KubeVersion(1, 37, 2), cluster_name="kept", log=said.append)

    provider._reset_stale_runtime_endpoints([stale, clean])

    assert stale.transport.run.dropin is None and stale.kubelet.restarts == 1
    assert ["rmdir", "--ignore-fail-on-non-empty", "/run/systemd/system/kubelet.service.d"] in (
        stale.transport.run.commands()
    )
    assert clean.kubelet.restarts == 0
    assert ["systemctl", "daemon-reload"] not in clean.transport.run.commands()
    assert said == [
        f"node dc-kind-worker: removed the kubelet's CRI endpoint drop-in left by an earlier run ({ENDPOINT}, "
        "served by nothing) and restarted the kubelet on containerd"
    ]


def test_the_systemd_kubelets_log_mark_is_to_the_microsecond():
    """Whole seconds took in the kubelet's lines from earlier in the mark's second (kind: a pod's first SyncLoop
    ADD, a few ms before the mark, read as its re-admission after the restart)."""
    ran: list[list[str]] = []
    kubelet = SystemdKubelet("dc-kind-worker", lambda argv, **kw: ran.append(list(argv)) or b"")
    mark = kubelet.log_mark()
    assert mark > 10**15  # microseconds since the epoch
    kubelet.log_since(1_795_856_196_006_399)
    assert "--since=@1795856196.006399" in ran[-1]


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


class _ShakyNode:
    """A node whose first command of each step dies as a docker exec hit by Ctrl-C does (exit 130)."""

    name = "dc-kind-worker"

    def __init__(self) -> None:
        self.done: list[str] = []
        self.kubelet = self
        self._failed: set[str] = set()

    def _step(self, what: str) -> None:
        if what not in self._failed:
            self._failed.add(what)
            raise CommandError(["docker", "exec", self.name, what], 130, "")
        self.done.append(what)

    def set_runtime_endpoint(self, endpoint):
        self._step(f"endpoint {endpoint}")

    def restart(self):
        self._step("restart")


class _Proxy:
    def __init__(self) -> None:
        self.cleared = False

    def clear_faults(self):
        self.cleared = True

    def unblock(self):
        pass


def test_the_fixtures_way_back_retries_a_node_command_cut_short_by_the_ctrl_c():
    """Ctrl-C reaches pytest's whole process group, the docker exec running then too: the kubelet must still end
    up on containerd (seen on kind: `systemctl daemon-reload` exited 130 in the fixture's teardown)."""
    from device_conformance.fixtures import cri_proxy

    node, proxy = _ShakyNode(), _Proxy()

    cri_proxy.back_on_the_runtime(None, node, proxy)

    assert proxy.cleared
    assert node.done == ["endpoint None", "restart"]  # restart() itself waits for the node Ready again
