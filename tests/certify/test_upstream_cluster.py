"""`certify dra-test-driver` with an API server: the ResourceClaims and allocations made for upstream's DRA test
driver (exact objects), the calls that create them, the cluster's teardown on every way out, and the verb's
--no-cluster option. No cluster here: the provider and API client are stand-ins."""

import signal
from contextlib import contextmanager
from pathlib import Path

import pytest

from device_conformance.certify import upstream, upstream_cluster
from device_conformance.certify.upstream_cluster import AllocatedClaims
from device_conformance.cli import certify as certify_cli
from device_conformance.cli.main import build_parser, main
from device_conformance.expectations.versions import KubeVersion

NODE = "dc-r0a1b2c"
DRIVER = "test-driver.cdi.k8s.io"
V1_37_1 = KubeVersion.parse("1.37.1")


def test_the_device_class_selects_the_test_driver_devices():
    assert upstream_cluster.device_class_manifest() == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "test-driver.cdi.k8s.io"'}}]},
    }


def test_a_claim_asks_for_one_device_of_the_driver_class():
    assert upstream_cluster.claim_manifest("certify-claim-0") == {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "certify-claim-0"},
        "spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": DRIVER, "count": 1}}]}},
    }


def test_the_allocation_is_the_schedulers_for_a_device_of_the_node_pool():
    assert upstream_cluster.allocation(NODE, "device-01") == {
        "devices": {"results": [{"request": "dev", "driver": DRIVER, "pool": NODE, "device": "device-01"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [NODE]}]}]
        },
    }


def test_the_status_update_keeps_the_stored_claim_and_adds_only_the_allocation():
    created = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u-1", "resourceVersion": "42"},
        "spec": {"devices": {}},
        "status": {},
    }
    body = upstream_cluster.with_allocation(created, NODE, "device-00")
    assert body == {**created, "status": {"allocation": upstream_cluster.allocation(NODE, "device-00")}}
    assert created["status"] == {}  # the stored claim is not changed


def _stored(name: str, uid: str, device: str) -> dict:
    return {
        "metadata": {"name": name, "namespace": upstream_cluster.NAMESPACE, "uid": uid},
        "status": {"allocation": upstream_cluster.allocation(NODE, device)},
    }


def test_target_claims_name_each_claim_and_its_allocated_devices():
    claims, allocated = upstream_cluster.target_claims([_stored("a", "u-a", "device-00"), _stored("b", "u-b", "x")])
    assert claims == [("dc-certify-upstream", "u-a", "a"), ("dc-certify-upstream", "u-b", "b")]
    assert allocated == {"u-a": ["device-00"], "u-b": ["x"]}


class _Recorder:
    def __init__(self, calls: list) -> None:
        self.calls = calls

    def __getattr__(self, method: str):
        def call(*args, **kwargs):
            self.calls.append((method, args))
            if method == "create_namespaced_custom_object":
                body = args[4]
                meta = {**body["metadata"], "namespace": args[2], "uid": f"uid-{body['metadata']['name']}"}
                return {**body, "metadata": {**meta, "resourceVersion": "1"}}
            if method == "replace_namespaced_custom_object_status":
                return args[5]
            return {}

        return call


class _FakeKube:
    def __init__(self) -> None:
        self.calls: list = []
        self.core = self.custom = _Recorder(self.calls)
        self.closed = False

    def close(self) -> None:
        self.closed = True


def test_allocate_claims_creates_the_namespace_class_and_two_allocated_claims():
    kube = _FakeKube()
    stored = upstream_cluster.allocate_claims(kube, NODE)
    ns = upstream_cluster.NAMESPACE
    assert [c[0] for c in kube.calls] == [
        "create_namespace",
        "create_cluster_custom_object",
        "create_namespaced_custom_object",
        "replace_namespaced_custom_object_status",
        "create_namespaced_custom_object",
        "replace_namespaced_custom_object_status",
    ]
    assert kube.calls[0][1] == ({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},)
    assert kube.calls[1][1] == (
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        upstream_cluster.device_class_manifest(),
    )
    assert kube.calls[2][1] == (
        "resource.k8s.io",
        "v1",
        ns,
        "resourceclaims",
        upstream_cluster.claim_manifest("certify-claim-0"),
    )
    assert kube.calls[3][1][:5] == ("resource.k8s.io", "v1", ns, "resourceclaims", "certify-claim-0")
    assert [s["status"]["allocation"]["devices"]["results"][0]["device"] for s in stored] == [
        "device-00",
        "device-01",
    ]
    assert [s["metadata"]["resourceVersion"] for s in stored] == ["1", "1"]


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
    """make_provider and Kube.from_kubeconfig replaced: (provider, kube, the settings make_provider got)."""
    provider, kube, given = _FakeProvider(tmp_path / "admin.kubeconfig"), _FakeKube(), []

    def make_provider(settings, *, log):
        given.append(settings)
        return provider

    monkeypatch.setattr("device_conformance.providers.make_provider", make_provider)
    monkeypatch.setattr(upstream_cluster.Kube, "from_kubeconfig", classmethod(lambda cls, path: kube))
    return provider, kube, given


def test_allocated_claims_bring_up_a_local_cluster_and_tear_it_down(stand_ins):
    provider, kube, given = stand_ins
    before = signal.getsignal(signal.SIGTERM)
    with upstream_cluster.allocated_claims(V1_37_1, log=lambda _: None) as api:
        assert signal.getsignal(signal.SIGTERM) is not before  # SIGTERM reaches the teardown as Ctrl-C
        assert provider.events == ["up"] and kube.closed
    assert provider.events == ["up", "down"]
    assert signal.getsignal(signal.SIGTERM) is before
    assert given[0].provider.value == "local" and str(given[0].k8s_version.value) == "1.37.1"
    assert api == AllocatedClaims(
        provider.kubeconfig,
        NODE,
        [
            ("dc-certify-upstream", "uid-certify-claim-0", "certify-claim-0"),
            (upstream_cluster.NAMESPACE, "uid-certify-claim-1", "certify-claim-1"),
        ],
        {"uid-certify-claim-0": ["device-00"], "uid-certify-claim-1": ["device-01"]},
    )


@pytest.mark.parametrize("failure", [RuntimeError("boom"), KeyboardInterrupt()])
def test_the_cluster_is_torn_down_when_the_run_fails_or_is_interrupted(stand_ins, failure):
    provider, _, _ = stand_ins
    with pytest.raises(type(failure)), upstream_cluster.allocated_claims(V1_37_1, log=lambda _: None):
        raise failure
    assert provider.events == ["up", "down"]


def test_the_cluster_is_torn_down_when_creating_the_claims_fails(stand_ins):
    provider, kube, _ = stand_ins
    kube.custom = None  # creating the class fails
    with pytest.raises(AttributeError), upstream_cluster.allocated_claims(V1_37_1, log=lambda _: None):
        pytest.fail("not reached")
    assert provider.events == ["up", "down"] and kube.closed


def test_no_cluster_means_no_api_server_and_no_claims(stand_ins):
    provider, _, _ = stand_ins
    with upstream_cluster.api_server(V1_37_1, cluster=False) as api:
        assert api == AllocatedClaims(None, upstream.NO_CLUSTER_NODE, [], {})
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


def test_the_verb_hands_the_claims_kubeconfig_and_node_to_the_certifier(verb, monkeypatch, tmp_path):
    api = AllocatedClaims(tmp_path / "admin.kubeconfig", NODE, [("ns", "u-0", "c-0"), ("ns", "u-1", "c-1")], {})
    api.allocated = {"u-0": ["device-00"], "u-1": ["device-01"]}
    asked = []

    @contextmanager
    def allocated_claims(version, log):
        asked.append(str(version))
        yield api

    monkeypatch.setattr(upstream_cluster, "allocated_claims", allocated_claims)
    assert main(["certify", "dra-test-driver", "--k8s-version", "1.37.1", "--out", str(tmp_path / "out")]) == 0
    [target] = verb
    assert asked == ["1.37.1"]
    assert (target.claims, target.allocated) == (api.claims, api.allocated)
    assert (target.kubeconfig, target.node_name) == (str(api.kubeconfig), NODE)
    assert f"--kubeconfig {api.kubeconfig} kubelet-plugin --node-name {NODE} " in target.command


def test_the_verb_with_no_cluster_brings_up_nothing(verb, monkeypatch, tmp_path):
    monkeypatch.setattr(upstream_cluster, "allocated_claims", lambda *a, **k: pytest.fail("no cluster wanted"))
    assert main(["certify", "dra-test-driver", "--no-cluster", "--out", str(tmp_path / "out")]) == 0
    [target] = verb
    assert (target.claims, target.allocated, target.kubeconfig) == ([], {}, None)
    assert "--node-name certify-node " in target.command
