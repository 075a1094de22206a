"""The kubelet's own Prometheus metrics, read through the API server's node proxy: how a black-box test counts
the kubelet's calls to a vendor's subject (whose call log we do not have).

The counters are the kubelet's (pkg/kubelet/metrics/metrics.go, v1.37.1) and start at zero with each kubelet
process:
- `kubelet_device_plugin_registration_total{resource_name}`: Register calls the kubelet received
  (DevicePluginRegistrationCount, incremented in pkg/kubelet/cm/devicemanager/plugin/v1beta1/server.go Register);
- `kubelet_device_plugin_alloc_duration_seconds_count{resource_name}`: Allocate calls
  (DevicePluginAllocationDuration, observed after each Allocate RPC in
  pkg/kubelet/cm/devicemanager/manager.go allocateContainerResources);
- `dra_grpc_operations_duration_seconds_count{driver_name, method_name, grpc_status_code}`: the kubelet's gRPC calls to
  a DRA driver (DRAGRPCOperationsDuration, a client interceptor in pkg/kubelet/cm/dra/plugin/dra_plugin.go).
"""

from __future__ import annotations

from device_conformance.kube.client import Kube
from device_conformance.kube.metrics import Sample, read, total

DP_REGISTRATIONS = "kubelet_device_plugin_registration_total"
DP_ALLOCATE = "kubelet_device_plugin_alloc_duration_seconds_count"
DRA_GRPC = "dra_grpc_operations_duration_seconds_count"
# The full gRPC method names the interceptor records (staging/src/k8s.io/kubelet/pkg/apis/dra/v1/api.proto). The
# service part is the one the kubelet chose for the driver: v1 from 1.34, v1beta1 on 1.32-1.33 (whose kubelet has
# no v1 service, module source v1.33.13 pkg/kubelet/cm/dra/plugin/registration.go) and for a v1beta1-only driver;
# the counts match the method's own name, whatever the service.
DRA_PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
DRA_UNPREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"


def _rpc(method: str) -> str:
    """The RPC's own name in a full gRPC method name: /pkg.Service/Method -> Method."""
    return method.rsplit("/", 1)[-1]


class KubeletCounts:
    """The counts a black-box test asserts on, for one node's kubelet (zero again after each kubelet start)."""

    def __init__(self, kube: Kube, node: str) -> None:
        self.kube, self.node = kube, node

    def registrations(self, resource: str) -> int:
        return total(read(self.kube, self.node), DP_REGISTRATIONS, resource_name=resource)

    def allocations(self, resource: str) -> int:
        return total(read(self.kube, self.node), DP_ALLOCATE, resource_name=resource)

    def dra_calls(self, driver: str, method: str, *, ok: bool | None = None) -> int:
        """gRPC calls of `method` (DRA_PREPARE, DRA_UNPREPARE) to `driver`; ok=True only those answered OK."""
        return _dra_calls(read(self.kube, self.node), driver, method, ok)

    def dra_counts(self, driver: str, *, ok: bool | None = True) -> tuple[int, int]:
        """(NodePrepareResources, NodeUnprepareResources) calls to `driver` since the kubelet started: by default
        those the driver answered OK (a call the kubelet made while the driver's socket was gone ends Unavailable
        and is retried); ok=None counts every call."""
        samples = read(self.kube, self.node)  # one scrape for both counts
        return _dra_calls(samples, driver, DRA_PREPARE, ok), _dra_calls(samples, driver, DRA_UNPREPARE, ok)


def _dra_calls(samples: list[Sample], driver: str, method: str, ok: bool | None) -> int:
    picked = [
        s
        for s in samples
        if s.name == DRA_GRPC
        and s.labels.get("driver_name") == driver
        and _rpc(s.labels.get("method_name", "")) == _rpc(method)
    ]
    if ok is not None:
        picked = [s for s in picked if (s.labels.get("grpc_status_code") == "OK") == ok]
    return int(sum(s.value for s in picked))
