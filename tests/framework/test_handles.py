"""Pod, claim-pod and node-resource handles against stand-ins: an API stub and a podresources server on
a real Unix socket per node (no cluster)."""

import shutil
import tempfile
from concurrent import futures
from pathlib import Path
from types import SimpleNamespace

import grpc
import pytest
from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.core.errors import ConformanceError
from device_conformance.framework.handles import ClaimPodHandle, NodeResource, PodHandle
from device_conformance.kube.podresources import DEFAULT_SOCKET
from device_conformance.protos.podresources.v1 import api_pb2 as pb
from device_conformance.protos.podresources.v1 import api_pb2_grpc as pb_grpc

RESOURCE = "example.com/dev"


def pod(name="p", node=None, uid="uid-1", restarts=None, claims=()):
    statuses = None
    if restarts is not None:
        statuses = [
            client.V1ContainerStatus(
                name=container, restart_count=count, image="i", image_id="", ready=True, container_id=None
            )
            for container, count in restarts.items()
        ]
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, namespace="ns", uid=uid),
        spec=client.V1PodSpec(containers=[], node_name=node),
        status=client.V1PodStatus(
            phase="Running",
            container_statuses=statuses,
            resource_claim_statuses=[client.V1PodResourceClaimStatus(name=n, resource_claim_name=c) for n, c in claims],
        ),
    )


class CoreStub:
    """The two CoreV1Api calls the handles make here; `current` is what a read returns."""

    def __init__(self, current):
        self.current = current
        self.deleted = []

    def read_namespaced_pod(self, name, namespace):
        assert (namespace, name) == (self.current.metadata.namespace, self.current.metadata.name)
        return self.current

    def delete_namespaced_pod(self, name, namespace, **options):
        self.deleted.append((namespace, name, options))

    def read_node(self, name):
        status = client.V1NodeStatus(capacity={RESOURCE: "2"}, allocatable={RESOURCE: "1"})
        return client.V1Node(metadata=client.V1ObjectMeta(name=name), status=status)


class CustomStub:
    def __init__(self, claim):
        self.claim = claim

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        assert (group, version, plural, name) == ("resource.k8s.io", "v1", "resourceclaims", "gen-claim")
        return self.claim


class Lister(pb_grpc.PodResourcesListerServicer):
    def __init__(self, pods):
        self.pods = pods

    def List(self, request, context):
        return pb.ListPodResourcesResponse(pod_resources=self.pods)


@pytest.fixture
def node_root():
    root = Path(tempfile.mkdtemp(prefix="handles-", dir="/tmp"))
    servers = []

    def serve(node_name, pods):
        """A node whose podresources socket (under the root) lists `pods`."""
        path = root / node_name / DEFAULT_SOCKET.lstrip("/")
        path.parent.mkdir(parents=True)
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        pb_grpc.add_PodResourcesListerServicer_to_server(Lister(pods), server)
        server.add_insecure_port(f"unix://{path}")
        server.start()
        servers.append(server)
        return SimpleNamespace(name=node_name, host_path=lambda p, n=node_name: root / n / str(p).lstrip("/"))

    yield serve
    for server in servers:
        server.stop(0).wait()
    shutil.rmtree(root, ignore_errors=True)


def listed(name, devices):
    container = pb.ContainerResources(
        name="main", devices=[pb.ContainerDevices(resource_name=RESOURCE, device_ids=devices)]
    )
    return pb.PodResources(name=name, namespace="ns", containers=[container])


def test_handle_of_a_created_pod_carries_its_identity():
    kube = SimpleNamespace(core=CoreStub(pod(uid="u-42")))
    handle = PodHandle.of(kube, pod(uid="u-42"))
    assert (handle.namespace, handle.name, handle.uid) == ("ns", "p", "u-42")
    assert str(handle) == "pod ns/p"
    assert handle.read().metadata.uid == "u-42"
    handle.force_delete()
    assert kube.core.deleted == [("ns", "p", {"grace_period_seconds": 0})]


def test_podresources_are_read_on_the_node_the_pod_is_bound_to(node_root):
    """With two nodes, devices() asks the bound node's socket (the other one lists nothing for the pod)."""
    one = node_root("node-1", [])
    two = node_root("node-2", [listed("p", ["dev-1"])])
    kube = SimpleNamespace(core=CoreStub(pod(node="node-2")))
    handle = PodHandle.of(kube, pod(node="node-2"), [one, two])
    assert handle.devices(RESOURCE) == ["dev-1"]
    assert handle.podresources().container("main").device_ids == {RESOURCE: ["dev-1"]}
    assert PodHandle.of(kube, pod(name="other"), [two]).podresources() is None


def test_podresources_without_node_access_says_so():
    handle = PodHandle.of(SimpleNamespace(core=CoreStub(pod())), pod())
    with pytest.raises(ConformanceError, match="no node file access for podresources of pod ns/p"):
        handle.podresources()


def test_wait_restarted_looks_at_the_named_container():
    kube = SimpleNamespace(core=CoreStub(pod(restarts={"sidecar": 0, "main": 2})))
    handle = PodHandle.of(kube, pod())
    assert handle.wait_restarted("main", at_least=2, timeout=1).metadata.name == "p"


def test_start_limits_by_kind_of_pod():
    assert PodHandle.DEFAULT_START_TIMEOUT == timeouts.POD_START
    assert ClaimPodHandle.DEFAULT_START_TIMEOUT == timeouts.CLAIM_POD_START


def test_claim_pod_finds_its_generated_claim_and_allocation():
    claim = {
        "metadata": {"name": "gen-claim", "uid": "claim-uid"},
        "status": {"allocation": {"devices": {"results": [{"device": "dev-0"}, {"device": "dev-1"}]}}},
    }
    kube = SimpleNamespace(core=CoreStub(pod(claims=[("dev", "gen-claim")])), custom=CustomStub(claim))
    handle = ClaimPodHandle.of(kube, pod(), resource_api="resource.k8s.io/v1")
    assert handle.claim_name() == "gen-claim"
    assert handle.claim_uid() == "claim-uid"
    assert handle.allocated_devices() == ["dev-0", "dev-1"]
    shared = ClaimPodHandle.of(kube, pod(), resource_api="resource.k8s.io/v1", shared_claim="mine")
    assert shared.claim_name() == "mine"


def test_node_resource_counts():
    resource = NodeResource(SimpleNamespace(core=CoreStub(pod())), "node-1", RESOURCE)
    assert resource.counts() == (2, 1)
    resource.wait_counts(2, 1, timeout=1)
    resource.stays_at(2, 1, duration=0)
    with pytest.raises(
        AssertionError, match=r"to stay at capacity/allocatable \(2, 2\).*capacity/allocatable \(2, 1\)"
    ):
        resource.stays_at(2, 2, duration=0)


class GoneCore(CoreStub):
    """The API server no longer has the pod (or fails otherwise, with `status`)."""

    def __init__(self, status=404):
        super().__init__(pod())
        self.status = status

    def read_namespaced_pod(self, name, namespace):
        raise client.ApiException(status=self.status, reason="stub")


def test_read_if_present_says_none_for_a_deleted_pod_and_raises_otherwise():
    assert PodHandle.of(SimpleNamespace(core=CoreStub(pod(uid="u-7"))), pod()).read_if_present().metadata.uid == "u-7"
    assert PodHandle.of(SimpleNamespace(core=GoneCore()), pod()).read_if_present() is None
    with pytest.raises(client.ApiException):
        PodHandle.of(SimpleNamespace(core=GoneCore(status=500)), pod()).read_if_present()


class GoneClaims:
    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        assert (plural, name) == ("resourceclaims", "gen-claim")
        raise client.ApiException(status=404, reason="stub")


def test_wait_claim_gone_takes_the_name_read_before_the_pod_went():
    """Once the pod is gone its status no longer names the generated claim: the name comes from the test."""
    kube = SimpleNamespace(core=GoneCore(), custom=GoneClaims())
    handle = ClaimPodHandle.of(kube, pod(), resource_api="resource.k8s.io/v1")
    handle.wait_claim_gone("gen-claim", timeout=1)
    kube_with_pod = SimpleNamespace(core=CoreStub(pod(claims=[("dev", "gen-claim")])), custom=GoneClaims())
    ClaimPodHandle.of(kube_with_pod, pod(), resource_api="resource.k8s.io/v1").wait_claim_gone(timeout=1)
