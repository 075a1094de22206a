"""CRIClient.status_info and container_annotations over a real gRPC Unix socket against a fake RuntimeService."""

import json
from concurrent import futures

import grpc
import pytest

from device_conformance.node.cri import CRIClient
from device_conformance.protos.cri.v1 import api_pb2, api_pb2_grpc


class FakeRuntime(api_pb2_grpc.RuntimeServiceServicer):
    def __init__(self) -> None:
        self.verbose: list[bool] = []

    def Status(self, request, context):
        self.verbose.append(request.verbose)
        ready = api_pb2.RuntimeCondition(type="RuntimeReady", status=True)
        return api_pb2.StatusResponse(
            status=api_pb2.RuntimeStatus(conditions=[ready]),
            info={"config": json.dumps({"enableCDI": True, "cdiSpecDirs": ["/var/run/cdi"]}), "golang": "go1.26.8"},
        )

    def ContainerStatus(self, request, context):
        if request.container_id != "c0ffee":
            context.abort(grpc.StatusCode.NOT_FOUND, f"container {request.container_id} not found")
        status = api_pb2.ContainerStatus(id="c0ffee", annotations={"dc.example.com/devices": "dev-1"})
        return api_pb2.ContainerStatusResponse(status=status)


@pytest.fixture
def runtime_socket(tmp_path):
    socket = tmp_path / "cri.sock"
    fake = FakeRuntime()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    api_pb2_grpc.add_RuntimeServiceServicer_to_server(fake, server)
    server.add_insecure_port(f"unix://{socket}")
    server.start()
    yield socket, fake
    server.stop(0).wait()


def test_status_info_asks_verbose_and_decodes_json_values(runtime_socket):
    socket, fake = runtime_socket
    with CRIClient(str(socket)) as cri:
        info = cri.status_info()
    assert fake.verbose == [True]
    assert info["config"] == {"enableCDI": True, "cdiSpecDirs": ["/var/run/cdi"]}
    assert info["golang"] == "go1.26.8"  # not JSON: kept as the string


def test_container_annotations_come_from_the_runtimes_container_status(runtime_socket):
    socket, _ = runtime_socket
    with CRIClient(str(socket)) as cri:
        assert cri.container_annotations("c0ffee") == {"dc.example.com/devices": "dev-1"}
        with pytest.raises(grpc.RpcError):
            cri.container_annotations("unknown")
