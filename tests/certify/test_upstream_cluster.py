"""`certify dra-test-driver` with an API server: the local cluster, its teardown on every way out, the claims made
on it as `--claims auto` makes them (dra_auto_claims, tested in test_dra_claims_auto.py), and the verb's
--no-cluster option. No cluster here: the provider and the API server are stand-ins."""

import signal
from contextlib import contextmanager
from pathlib import Path

import pytest

from device_conformance.certify import dra_auto_claims, upstream, upstream_cluster
from device_conformance.certify.upstream_cluster import ApiServer
from device_conformance.cli import certify as certify_cli
from device_conformance.cli.main import build_parser, main
from device_conformance.expectations.versions import KubeVersion

NODE = "dc-r0a1b2c"
DRIVER = "test-driver.cdi.k8s.io"
V1_37_1 = KubeVersion.parse("1.37.1")


class _FakeProvider:
    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.events: list[str] = []

    def up(self):
        self.events.append("up")
        node = type("Node", (), {"name": NODE})()
        return type("Handle", (), {"kubeconfig": self.kubeconfig, "nodes": [node]})()

    def down(self) -> None:
        self.events.append("down")


@pytest.fixture
def stand_ins(monkeypatch, tmp_path):
    """make_provider replaced: (provider, the settings make_provider got)."""
    provider, given = _FakeProvider(tmp_path / "admin.kubeconfig"), []

    def make_provider(settings, *, log):
        given.append(settings)
        return provider

    monkeypatch.setattr("device_conformance.providers.make_provider", make_provider)
    return provider, given


def test_the_local_cluster_is_brought_up_and_torn_down(stand_ins):
    provider, given = stand_ins
    before = signal.getsignal(signal.SIGTERM)
    with upstream_cluster.local_cluster(V1_37_1, log=lambda _: None) as api:
        assert signal.getsignal(signal.SIGTERM) is not before  # SIGTERM reaches the teardown as Ctrl-C
        assert provider.events == ["up"]
    assert provider.events == ["up", "down"]
    assert signal.getsignal(signal.SIGTERM) is before
    assert given[0].provider.value == "local" and str(given[0].k8s_version.value) == "1.37.1"
    assert api == ApiServer(provider.kubeconfig, NODE)


@pytest.mark.parametrize("failure", [RuntimeError("boom"), KeyboardInterrupt()])
def test_the_cluster_is_torn_down_when_the_run_fails_or_is_interrupted(stand_ins, failure):
    provider, _ = stand_ins
    with pytest.raises(type(failure)), upstream_cluster.local_cluster(V1_37_1, log=lambda _: None):
        raise failure
    assert provider.events == ["up", "down"]


def test_no_cluster_means_no_api_server(stand_ins):
    provider, _ = stand_ins
    with upstream_cluster.api_server(V1_37_1, cluster=False) as api:
        assert api == ApiServer(None, upstream.NO_CLUSTER_NODE)
    assert provider.events == []


def test_the_driver_gets_the_clusters_kubeconfig_and_node(tmp_path):
    command = upstream.dra_test_driver_command(Path("/c/test-driver"), tmp_path, Path("/k/admin.kubeconfig"), NODE)
    assert command.startswith(
        f"/c/test-driver --kubeconfig /k/admin.kubeconfig kubelet-plugin --node-name {NODE} --plugin-registration-path"
    )
    assert not (tmp_path / "kubeconfig").exists()
    unreachable = upstream.dra_test_driver_command(Path("/c/test-driver"), tmp_path)
    assert f"--kubeconfig {tmp_path}/kubeconfig kubelet-plugin --node-name certify-node " in unreachable
    assert (tmp_path / "kubeconfig").read_text() == upstream.UNREACHABLE_KUBECONFIG


def test_the_verb_brings_up_a_cluster_unless_told_not_to():
    parser = build_parser()
    assert parser.parse_args(["certify", "dra-test-driver"]).no_cluster is False
    assert parser.parse_args(["certify", "dra-test-driver", "--no-cluster"]).no_cluster is True


@pytest.fixture
def verb(monkeypatch, tmp_path):
    """`certify dra-test-driver` with the build and the certifier replaced: returns the targets it built."""
    targets = []
    monkeypatch.setattr(upstream, "build_dra_test_driver", lambda version, progress: Path("/c/test-driver"))
    monkeypatch.setattr(
        "device_conformance.certify.dra_driver.certify_dra_driver", lambda target: targets.append(target) or target
    )
    monkeypatch.setattr(certify_cli, "_finish", lambda cert, out: 0)
    return targets


def test_the_verb_makes_claims_as_claims_auto_does_on_the_cluster(verb, monkeypatch, tmp_path):
    api = ApiServer(tmp_path / "admin.kubeconfig", NODE)
    asked, sessions, deleted = [], [], []

    @contextmanager
    def local_cluster(version, log):
        asked.append(str(version))
        yield api

    class Maker:
        def make(self, subject_gone):
            return dra_auto_claims.MadeClaims([("ns", "u-0", "c-0")], {"u-0": ["device-00"]}, "made")

    @contextmanager
    def session(kubeconfig, driver, node, *, log):
        sessions.append((kubeconfig, driver, node))
        try:
            yield Maker()
        finally:
            deleted.append(True)

    monkeypatch.setattr(upstream_cluster, "local_cluster", local_cluster)
    monkeypatch.setattr(dra_auto_claims, "session", session)
    assert main(["certify", "dra-test-driver", "--k8s-version", "1.37.1", "--out", str(tmp_path / "out")]) == 0
    [target] = verb
    assert asked == ["1.37.1"] and deleted == [True]
    assert sessions == [(api.kubeconfig, DRIVER, NODE)]
    assert (target.claims, target.make_claims.__self__.__class__) == ([], Maker)  # made once the driver serves
    assert (target.kubeconfig, target.node_name) == (str(api.kubeconfig), NODE)
    assert f"--kubeconfig {api.kubeconfig} kubelet-plugin --node-name {NODE} " in target.command


def test_the_verb_with_no_cluster_brings_up_nothing(verb, monkeypatch, tmp_path):
    monkeypatch.setattr(upstream_cluster, "local_cluster", lambda *a, **k: pytest.fail("no cluster wanted"))
    assert main(["certify", "dra-test-driver", "--no-cluster", "--out", str(tmp_path / "out")]) == 0
    [target] = verb
    assert (target.claims, target.make_claims, target.kubeconfig) == ([], None, None)
    assert "--node-name certify-node " in target.command
