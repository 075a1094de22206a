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
from device_conformance.kube.metrics import read, total

DP_REGISTRATIONS = "kubelet_device_plugin_registration_total"
DP_ALLOCATE = "kubelet_device_plugin_alloc_duration_seconds_count"
DRA_GRPC = "dra_grpc_operations_duration_seconds_count"
# The full gRPC method names the interceptor records (staging/src/k8s.io/kubelet/pkg/apis/dra/v1/api.proto).
DRA_PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
DRA_UNPREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"


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
        samples = [s for s in read(self.kube, self.node) if s.name == DRA_GRPC]
        picked = [s for s in samples if s.labels.get("driver_name") == driver and s.labels.get("method_name") == method]
        if ok is not None:
            picked = [s for s in picked if (s.labels.get("grpc_status_code") == "OK") == ok]
        return int(sum(s.value for s in picked))

    def dra_counts(self, driver: str, *, ok: bool | None = True) -> tuple[int, int]:
        """(NodePrepareResources, NodeUnprepareResources) calls to `driver` since the kubelet started: by default
        those the driver answered OK (a call the kubelet made while the driver's socket was gone ends Unavailable
        and is retried); ok=None counts every call."""
        samples = [s for s in read(self.kube, self.node) if s.labels.get("driver_name") == driver]
        if ok is not None:
            samples = [s for s in samples if (s.labels.get("grpc_status_code") == "OK") == ok]
        return total(samples, DRA_GRPC, method_name=DRA_PREPARE), total(samples, DRA_GRPC, method_name=DRA_UNPREPARE)
