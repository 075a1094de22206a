"""The podresources client against a small fake PodResourcesLister on a real Unix socket."""

import shutil
import tempfile
from concurrent import futures

import grpc
import pytest

from device_conformance.kube.podresources import (
    ClaimResource,
    Devices,
    PodResourcesError,
    allocatable_resources,
    find_pod,
    get_pod_resources,
    list_pod_resources,
)
from device_conformance.protos.podresources.v1 import api_pb2 as pb
from device_conformance.protos.podresources.v1 import api_pb2_grpc as pb_grpc


def _topology(*nodes):
    return pb.TopologyInfo(nodes=[pb.NUMANode(ID=n) for n in nodes])


GPU_POD = pb.PodResources(
    name="gpu-pod",
    namespace="team-a",
    containers=[
        pb.ContainerResources(
            name="main",
            devices=[
                pb.ContainerDevices(resource_name="example.com/dev", device_ids=["dev-1"], topology=_topology(0)),
                pb.ContainerDevices(resource_name="example.com/dev", device_ids=["dev-2"], topology=_topology(1)),
            ],
            cpu_ids=[2, 3],
            memory=[pb.ContainerMemory(memory_type="memory", size=1 << 30, topology=_topology(0))],
            dynamic_resources=[
                pb.DynamicResource(
                    claim_name="gpu-claim",
                    claim_namespace="team-a",
                    claim_resources=[
                        pb.ClaimResource(
                            cdi_devices=[pb.CDIDevice(name="dra.example.com/gpu=gpu-0")],
                            driver_name="dra.example.com",
                            pool_name="node-1",
                            device_name="gpu-0",
                            share_id="share-1",
                        )
                    ],
                )
            ],
        ),
        pb.ContainerResources(name="sidecar"),
    ],
)


class FakeLister(pb_grpc.PodResourcesListerServicer):
    def List(self, request, context):
        return pb.ListPodResourcesResponse(pod_resources=[GPU_POD, pb.PodResources(name="idle", namespace="default")])

    def GetAllocatableResources(self, request, context):
        return pb.AllocatableResourcesResponse(
            devices=[
                pb.ContainerDevices(resource_name="example.com/dev", device_ids=["dev-1", "dev-2"]),
                # A device on two NUMA nodes is listed once per node (pkg/kubelet/cm/container_manager.go
                # containerDevicesFromResourceDeviceInstances).
                pb.ContainerDevices(resource_name="example.com/dev", device_ids=["dev-3"], topology=_topology(0)),
                pb.ContainerDevices(resource_name="example.com/dev", device_ids=["dev-3"], topology=_topology(1)),
            ],
            cpu_ids=[0, 1, 2, 3],
        )

    def Get(self, request, context):
        if (request.pod_name, request.pod_namespace) != ("gpu-pod", "team-a"):
            context.abort(grpc.StatusCode.NOT_FOUND, f"pod {request.pod_name} not found")
        return pb.GetPodResourcesResponse(pod_resources=GPU_POD)


@pytest.fixture
def socket_path():
    root = tempfile.mkdtemp(prefix="podres-", dir="/tmp")
    path = f"{root}/kubelet.sock"
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    pb_grpc.add_PodResourcesListerServicer_to_server(FakeLister(), server)
    server.add_insecure_port(f"unix://{path}")
    server.start()
    yield path
    server.stop(0).wait()
    shutil.rmtree(root, ignore_errors=True)


def test_list_maps_pods_containers_and_devices(socket_path):
    pods = list_pod_resources(socket_path)

    assert [(p.namespace, p.name) for p in pods] == [("team-a", "gpu-pod"), ("default", "idle")]
    main = find_pod(pods, "gpu-pod", "team-a").container("main")
    assert main.device_ids == {"example.com/dev": ["dev-1", "dev-2"]}
    assert main.devices[1] == Devices("example.com/dev", ("dev-2",), (1,))
    assert (main.cpu_ids, main.memory[0].size, main.memory[0].numa_nodes) == ((2, 3), 1 << 30, (0,))
    assert pods[0].container("sidecar").device_ids == {}
    assert find_pod(pods, "gpu-pod", "default") is None


def test_list_maps_dynamic_resources(socket_path):
    [claim] = list_pod_resources(socket_path)[0].container("main").dynamic_resources

    assert (claim.claim_name, claim.claim_namespace) == ("gpu-claim", "team-a")
    assert claim.claim_resources == (
        ClaimResource("dra.example.com", "node-1", "gpu-0", ("dra.example.com/gpu=gpu-0",), "share-1"),
    )


def test_allocatable_resources(socket_path):
    allocatable = allocatable_resources(socket_path)

    assert allocatable.device_ids == {"example.com/dev": ["dev-1", "dev-2", "dev-3"]}, "each device once"
    assert [d.numa_nodes for d in allocatable.devices if d.device_ids == ("dev-3",)] == [(0,), (1,)]
    assert allocatable.cpu_ids == (0, 1, 2, 3)


def test_get_one_pod_and_a_missing_pod_raises_with_the_status(socket_path):
    assert get_pod_resources(socket_path, "gpu-pod", "team-a").container("main").device_ids == {
        "example.com/dev": ["dev-1", "dev-2"]
    }

    with pytest.raises(PodResourcesError, match=r"Get on .* failed: NOT_FOUND: pod nope not found") as missing:
        get_pod_resources(socket_path, "nope", "team-a")
    assert missing.value.code == grpc.StatusCode.NOT_FOUND


def test_missing_container_names_the_pod_and_its_containers(socket_path):
    pod = get_pod_resources(socket_path, "gpu-pod", "team-a")

    with pytest.raises(KeyError, match=r"team-a/gpu-pod has no container 'other'.*\['main', 'sidecar'\]"):
        pod.container("other")
