"""The node agent of existing clusters (providers/agent/): its manifests, the option's checks,
the routing of node calls through it, and its wire protocol against the real agent binary (built with go,
run on this host without nsenter)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from device_conformance.core.errors import BadInput, CommandError
from device_conformance.node.base import WRITE_ATOMICALLY
from device_conformance.node.cri import Sandbox
from device_conformance.providers.agent import agent_node, deploy, manifest
from device_conformance.providers.agent.agent_node import AgentNode, AgentTransport
from device_conformance.providers.agent.client import AgentClient, AgentError, SocketForwarder
from device_conformance.providers.base import ClusterHandle
from device_conformance.providers.existing import NO_NODE_ACCESS, ExistingProvider
from device_conformance.settings import resolve

# -- manifests ---------------------------------------------------------------------------------------------


def test_agent_pod_is_bound_to_its_node_privileged_in_the_host_namespaces() -> None:
    pod = manifest.pod("s1", "worker-7", "example/agent:1", 21000)
    spec = pod["spec"]
    assert pod["metadata"] == {
        "name": "dc-node-agent-worker-7",
        "namespace": "dc-node-agent-s1",
        "labels": {manifest.LABEL: "true", manifest.SESSION_LABEL: "s1"},
        "annotations": {f"{manifest.LABEL}-node": "worker-7"},
    }
    assert (spec["nodeName"], spec["hostPID"], spec["hostNetwork"]) == ("worker-7", True, True)
    assert "affinity" not in spec and "nodeSelector" not in spec  # nodeName only: never scheduled elsewhere
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    (container,) = spec["containers"]
    assert container["image"] == "example/agent:1"
    assert container["securityContext"] == {"privileged": True}
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["DC_AGENT_LISTEN"] == "$(HOST_IP):21000"
    assert container["env"][0] == {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}}
    assert spec["volumes"] == [{"name": "secrets", "secret": {"secretName": "dc-node-agent", "defaultMode": 0o400}}]


def test_agent_namespace_allows_privileged_pods_and_is_labelled_for_cleanup() -> None:
    labels = manifest.namespace("s1")["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "privileged"
    assert labels[manifest.LABEL] == "true"
    assert labels[manifest.SESSION_LABEL] == "s1"


def test_secret_holds_the_key_pair_and_token() -> None:
    body = manifest.secret("s1", b"CERT", b"KEY", "tok")
    assert body["metadata"]["namespace"] == "dc-node-agent-s1"
    assert body["stringData"] == {"tls.crt": "CERT", "tls.key": "KEY", "token": "tok"}


def test_pod_names_are_dns_labels_and_distinct_for_long_node_names() -> None:
    assert manifest.pod_name("Node_1.example.com") == "dc-node-agent-node-1-example-com"
    a, b = manifest.pod_name("n" * 80 + "a"), manifest.pod_name("n" * 80 + "b")
    assert len(a) == len(b) == 63
    assert a != b


def test_port_out_of_range_is_refused() -> None:
    with pytest.raises(BadInput, match="node agent port 80 is out of range"):
        manifest.pod("s1", "n", "i", 80)


# -- options -----------------------------------------------------------------------------------------------


def _existing(tmp_path: Path, **options: object) -> object:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    return resolve({"provider": "existing", "kubeconfig": str(kubeconfig), **options}, {})


def test_allow_node_disruption_parses_the_node_list(tmp_path: Path) -> None:
    settings = _existing(tmp_path, allow_node_disruption=" w1, w2 ")
    assert settings.allow_node_disruption.value == ("w1", "w2")  # type: ignore[attr-defined]
    assert settings.allow_node_disruption.source.name == "--allow-node-disruption"  # type: ignore[attr-defined]
    assert _existing(tmp_path).allow_node_disruption.value is None  # type: ignore[attr-defined]


def test_allow_node_disruption_needs_the_existing_provider() -> None:
    with pytest.raises(BadInput) as caught:
        resolve({"provider": "kind", "allow_node_disruption": "w1"}, {})
    assert caught.value.problem == (
        "--allow-node-disruption 'w1' deploys the node agent on an existing cluster; the provider is kind "
        "(option --provider)"
    )
    assert caught.value.fix.startswith("use --provider existing --kubeconfig PATH")


@pytest.mark.parametrize(
    ("text", "problem"),
    [("w1,,w2", "has an empty node name"), (" ", "has an empty node name"), ("w1,w1", "names w1 more than once")],
)
def test_malformed_node_lists_are_refused(tmp_path: Path, text: str, problem: str) -> None:
    with pytest.raises(BadInput, match=problem):
        _existing(tmp_path, allow_node_disruption=text)


def test_allow_node_disruption_from_the_environment(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    settings = resolve({"provider": "existing", "kubeconfig": str(kubeconfig)}, {"ALLOW_NODE_DISRUPTION": "w3"})
    assert settings.allow_node_disruption.value == ("w3",)
    assert settings.allow_node_disruption.source.kind == "environment"


def test_node_agent_image_needs_the_existing_provider() -> None:
    with pytest.raises(BadInput, match="is the image of the node agent, which only --provider existing deploys"):
        resolve({"provider": "local", "node_agent_image": "r/a:1"}, {})


def test_vendor_daemonset_works_with_existing_but_not_an_upstream_one(tmp_path: Path) -> None:
    settings = _existing(tmp_path, vendor_device_plugin="example.com/gpu", vendor_daemonset="ns/gpu")
    assert settings.vendor.value.namespace_name == ("ns", "gpu")  # type: ignore[attr-defined]
    with pytest.raises(BadInput, match="deploy the subject on your cluster yourself"):
        _existing(
            tmp_path,
            vendor_device_plugin="example.com/resource",
            vendor_daemonset="upstream:sample-device-plugin",
        )


def test_an_unknown_node_is_one_error_naming_the_cluster_nodes() -> None:
    with pytest.raises(BadInput) as caught:
        deploy.check_nodes(["worker-1", "wrker-2"], ["control-plane", "worker-1", "worker-2"])
    assert caught.value.problem == (
        "--allow-node-disruption names wrker-2, not a node of this cluster (its nodes: control-plane, worker-1, "
        "worker-2)"
    )
    assert caught.value.fix == "name nodes exactly as `kubectl get nodes` lists them"
    deploy.check_nodes(["worker-2"], ["worker-1", "worker-2"])  # a known node passes


def test_without_the_option_node_tests_skip_naming_it() -> None:
    from device_conformance.fixtures.cluster import no_node_access

    handle = ClusterHandle(name="existing", provider="existing", kubeconfig=Path("k"), k8s_version=None)  # type: ignore[arg-type]
    assert no_node_access(handle) == NO_NODE_ACCESS
    assert "--allow-node-disruption NODE[,NODE]" in NO_NODE_ACCESS


def test_existing_provider_removes_its_agents_on_down_and_on_keep(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("{}")
    calls: list[str] = []

    class Deployment:
        class kube:
            @staticmethod
            def close() -> None:
                calls.append("close")

        def down(self) -> None:
            calls.append("down")

    provider = ExistingProvider(kubeconfig, log=lambda _: None, allow_node_disruption=("n",), agent_image="i")
    provider.deployment = Deployment()
    provider.down()
    provider.down()  # once only
    assert calls == ["down", "close"]
    provider.deployment = Deployment()
    assert "left as it was" in provider.keep()
    assert calls == ["down", "close", "down", "close"]


# -- routing: every node call goes through the agent ------------------------------------------------------


class FakeClient:
    """AgentClient's run, recording (in_node, argv, stdin); answers from a table of argv prefixes."""

    node = "worker-1"

    def __init__(self, answers: dict[tuple[str, ...], bytes | int]) -> None:
        self.answers = answers
        self.calls: list[tuple[bool, list[str], bytes | None]] = []

    def run(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | None = None,
        check: bool = True,
        timeout: float = 120,
        in_node: bool = True,
    ) -> bytes:
        self.calls.append((in_node, list(argv), stdin))
        for prefix, answer in self.answers.items():
            if tuple(argv[: len(prefix)]) == prefix:
                if isinstance(answer, int):
                    if check:
                        raise CommandError(list(argv), answer, "failed")
                    return b""
                return answer
        return b""


class FakeCRI:
    def __init__(self, sandboxes: list[Sandbox]) -> None:
        self.items = sandboxes
        self.removed: list[str] = []

    def __enter__(self) -> FakeCRI:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def sandboxes(self) -> list[Sandbox]:
        return self.items

    def remove_sandbox(self, sandbox_id: str) -> None:
        self.removed.append(sandbox_id)


@pytest.fixture
def routed(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[AgentNode, FakeClient]]:
    client = FakeClient(
        {
            ("systemctl", "show"): b"4242\n",
            ("wget",): b"ok",
            ("date",): b"1700000000\n",
            ("cat", agent_node.KUBELET_CONFIG): b"containerRuntimeEndpoint: unix:///run/crio/crio.sock\n",
            ("cat", "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"): b'{"Data": 1}',
            ("sh", "-c", 'test -S "$1" && echo socket', "sh", "/var/lib/kubelet/pod-resources/kubelet.sock"): (
                b"socket\n"
            ),
        }
    )
    forwarded: list[str] = []

    class Forwarder:
        def __init__(self, _: object) -> None:
            pass

        def local(self, node_socket: str) -> Path:
            forwarded.append(node_socket)
            return Path(f"/tmp/fwd/{len(forwarded)}.sock")

        def close(self) -> None:
            forwarded.append("closed")

    monkeypatch.setattr(agent_node, "SocketForwarder", Forwarder)
    transport = AgentTransport(client, "dc-node-agent-s1")  # type: ignore[arg-type]
    node = AgentNode(transport)
    node.forwarded = forwarded  # type: ignore[attr-defined]
    yield node, client


def test_commands_run_in_the_node_namespaces(routed: tuple[AgentNode, FakeClient]) -> None:
    node, client = routed
    assert node.read_file("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint") == b'{"Data": 1}'
    node.write_file("/var/lib/kubelet/x", b"data", 0o644)
    node.signal_process(77, "STOP")
    assert client.calls == [
        (True, ["cat", "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"], None),
        (True, ["sh", "-c", WRITE_ATOMICALLY, "sh", "/var/lib/kubelet/x", "644"], b"data"),
        (True, ["kill", "-STOP", "77"], None),
    ]


def test_kubelet_through_systemd_health_and_clock_from_the_agent(routed: tuple[AgentNode, FakeClient]) -> None:
    node, client = routed
    assert node.kubelet.pid() == 4242
    assert node.kubelet.healthy() is True
    assert node.kubelet.log_mark() == 1700000000
    node.kubelet.service.stop()
    assert client.calls == [
        (True, ["systemctl", "show", "--property=MainPID", "--value", "kubelet"], None),
        (False, ["wget", "-q", "-O", "-", "http://127.0.0.1:10248/healthz"], None),
        (False, ["date", "+%s"], None),
        (True, ["systemctl", "stop", "kubelet"], None),
    ]


def test_a_healthz_request_that_times_out_is_unhealthy(
    routed: tuple[AgentNode, FakeClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    node, client = routed

    def timed_out(*_: object, **__: object) -> bytes:
        raise AgentError("timed out after 2s")

    monkeypatch.setattr(client, "run", timed_out)
    assert node.kubelet.healthy() is False


def test_node_sockets_are_forwarded_and_other_paths_refused(routed: tuple[AgentNode, FakeClient]) -> None:
    node, _ = routed
    socket_path = "/var/lib/kubelet/pod-resources/kubelet.sock"
    assert node.host_path(socket_path) == Path("/tmp/fwd/1.sock")
    assert node.host_path(socket_path) == Path("/tmp/fwd/1.sock")  # checked and forwarded once
    assert node.forwarded == [socket_path]  # type: ignore[attr-defined]
    with pytest.raises(BadInput, match="/var/lib/kubelet/device-plugins is not a Unix socket on node worker-1"):
        node.host_path("/var/lib/kubelet/device-plugins")


def test_cri_goes_to_the_runtime_socket_the_kubelet_config_names(
    routed: tuple[AgentNode, FakeClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    node, _ = routed
    opened: list[str] = []
    monkeypatch.setattr(agent_node, "CRIClient", lambda path: opened.append(path) or "cri")
    assert node.transport.cri() == "cri"
    assert node.forwarded == ["/run/crio/crio.sock"]  # type: ignore[attr-defined]
    assert opened == ["/tmp/fwd/1.sock"]


def test_reboot_simulation_spares_the_agent_sandbox(
    routed: tuple[AgentNode, FakeClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    node, _ = routed
    cri = FakeCRI(
        [
            Sandbox("a1", "dc-node-agent-worker-1", "dc-node-agent-s1", "u1", True),
            Sandbox("p1", "pod-1", "test-ns", "u2", True),
            Sandbox("p2", "kube-proxy-x", "kube-system", "u3", False),
        ]
    )
    monkeypatch.setattr(node.transport, "cri", lambda: cri)
    events: list[str] = []
    monkeypatch.setattr(node.kubelet, "stop", lambda: events.append("stop"))
    monkeypatch.setattr(node.kubelet, "_start", lambda *_: events.append("start"))
    monkeypatch.setattr(node.kubelet, "pid", lambda: 0)
    assert node.simulate_reboot() == 2
    assert cri.removed == ["p1", "p2"]
    assert events == ["stop", "start"]


# -- the real agent binary over TLS ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def agent_binary(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if shutil.which("go") is None:
        pytest.skip("no go toolchain to build the agent")
    from device_conformance.providers.agent import image

    target = tmp_path_factory.mktemp("agent") / "dc-node-agent"
    target.write_bytes(image._build(image.SOURCE.read_bytes()))
    target.chmod(0o755)
    return target


@pytest.fixture
def agent(agent_binary: Path, tmp_path: Path) -> Iterator[AgentClient]:
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    cert, key = deploy.self_signed("test")
    (secrets / "tls.crt").write_bytes(cert)
    (secrets / "tls.key").write_bytes(key)
    (secrets / "token").write_text("s3cret\n")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **os.environ,
        "DC_AGENT_LISTEN": f"127.0.0.1:{port}",
        "DC_AGENT_SECRETS": str(secrets),
        "DC_AGENT_NODE_ROOT": "/",
    }
    process = subprocess.Popen([str(agent_binary)], env=env, stderr=subprocess.PIPE)
    client = AgentClient("here", "127.0.0.1", port, "s3cret", cert)
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise
            time.sleep(0.05)
    yield client
    process.send_signal(signal.SIGTERM)
    process.wait(10)


def test_run_returns_stdout_takes_stdin_and_reports_the_exit_code(agent: AgentClient) -> None:
    assert agent.run(["sh", "-c", "cat; echo -n out; echo err >&2"], stdin=b"\x00in\xff", in_node=False) == (
        b"\x00in\xffout"
    )
    assert agent.run(["sh", "-c", "echo partial; exit 3"], check=False, in_node=False) == b"partial\n"
    with pytest.raises(CommandError) as caught:
        agent.run(["sh", "-c", "echo why >&2; exit 3"], in_node=False)
    assert caught.value.returncode == 3
    assert caught.value.output == "why\n"


def test_a_command_killed_by_a_signal_says_which(agent: AgentClient) -> None:
    with pytest.raises(AgentError, match="signal: alarm clock"):
        agent.run(["sh", "-c", "kill -ALRM $$"], in_node=False)


def test_run_times_out(agent: AgentClient) -> None:
    with pytest.raises(AgentError, match="timed out after 500ms"):
        agent.run(["sleep", "5"], timeout=0.5, in_node=False)


def test_wrong_token_and_wrong_certificate_are_refused(agent: AgentClient) -> None:
    wrong = AgentClient("here", agent.host, agent.port, "guess", deploy.self_signed("test")[0])
    with pytest.raises(AgentError, match="TLS with the node agent on here"):
        wrong.run(["true"], in_node=False)
    wrong.context = agent.context  # the right certificate, the wrong token
    with pytest.raises(AgentError, match="wrong token"):
        wrong.run(["true"], in_node=False)


def test_unix_socket_forwarding_carries_bytes_both_ways(agent: AgentClient, tmp_path: Path) -> None:
    served = tmp_path / "node.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(served))
    server.listen()

    def echo() -> None:
        conn, _ = server.accept()
        with conn:
            data = conn.recv(1024)
            conn.sendall(json.dumps({"got": data.decode()}).encode())

    thread = threading.Thread(target=echo, daemon=True)
    thread.start()
    forwarder = SocketForwarder(agent)
    try:
        local = forwarder.local(str(served))
        with socket.socket(socket.AF_UNIX) as conn:
            conn.settimeout(10)
            conn.connect(str(local))
            conn.sendall(b"hello")
            assert json.loads(conn.recv(1024)) == {"got": "hello"}
    finally:
        forwarder.close()
        server.close()
    assert not local.exists()


# -- tests that need a node path on the test host: NOT APPLICABLE through the agent -------------------------

pytest_plugins = ["pytester"]


def test_a_node_path_not_on_the_test_host_skips_the_test_as_not_applicable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_paths="""
import pytest
from device_conformance.providers.agent.agent_node import NotOnTestHost

@pytest.fixture
def needs_dir():
    raise NotOnTestHost("/var/lib/kubelet/device-plugins is not a Unix socket on node n1", "fix")

def test_in_setup(needs_dir):
    pass

def test_in_call():
    raise NotOnTestHost("/var/run/cdi is not a Unix socket on node n1", "fix")

def test_other_bad_input_still_fails():
    from device_conformance.core.errors import BadInput
    raise BadInput("a real problem", "fix")
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(skipped=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*NOT APPLICABLE through the node agent: /var/lib/kubelet/device-plugins is not a Unix socket on node n1",
            "*NOT APPLICABLE through the node agent: /var/run/cdi is not a Unix socket on node n1",
        ]
    )
