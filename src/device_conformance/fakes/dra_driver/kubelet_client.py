"""Dial a DRA driver the way the kubelet does (same services, same deadlines): for unit tests and diagnostics."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any

import grpc

from device_conformance.fakes.dra_driver.health import APIS as HEALTH_APIS
from device_conformance.fakes.dra_driver.service import VERSIONS
from device_conformance.protos.pluginregistration.v1 import api_pb2 as reg_pb2
from device_conformance.protos.pluginregistration.v1 import api_pb2_grpc as reg_grpc

# The kubelet's deadlines: GetInfo 1 s and NotifyRegistrationStatus 5 s (pkg/kubelet/pluginmanager/
# operationexecutor/operation_generator.go), DRA calls 45 s (pkg/kubelet/cm/dra, defaultClientCallTimeout).
GET_INFO_TIMEOUT = 1.0
NOTIFY_TIMEOUT = 5.0
DRA_CALL_TIMEOUT = 45.0

Claim = tuple[str, str, str]  # (namespace, uid, name)


class KubeletClient:
    def __init__(self, registration_socket: str, service_socket: str) -> None:
        # Own subchannels: Python shares them process-wide by default, so a channel opened after a
        # restart would inherit the old one's reconnect backoff.
        options = [("grpc.use_local_subchannel_pool", 1)]
        self._reg = grpc.insecure_channel(f"unix:{registration_socket}", options=options)
        self._svc = grpc.insecure_channel(f"unix:{service_socket}", options=options)

    def close(self) -> None:
        self._reg.close()
        self._svc.close()

    def __enter__(self) -> KubeletClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get_info(self, timeout: float = GET_INFO_TIMEOUT) -> reg_pb2.PluginInfo:
        return reg_grpc.RegistrationStub(self._reg).GetInfo(reg_pb2.InfoRequest(), timeout=timeout)

    def notify(self, registered: bool, error: str = "", timeout: float = NOTIFY_TIMEOUT) -> None:
        status = reg_pb2.RegistrationStatus(plugin_registered=registered, error=error)
        reg_grpc.RegistrationStub(self._reg).NotifyRegistrationStatus(status, timeout=timeout)

    def _dra(self, token: str) -> tuple[ModuleType, Any]:
        pb, grpc_mod = VERSIONS[token]
        return pb, grpc_mod.DRAPluginStub(self._svc)

    def prepare(
        self,
        claims: Sequence[Claim],
        *,
        version: str = "v1.DRAPlugin",
        timeout: float = DRA_CALL_TIMEOUT,
        wait_for_ready: bool = False,
    ) -> Any:
        """wait_for_ready: wait (up to timeout) for the endpoint to accept connections instead of failing at once,
        for a driver that serves only some time after registering."""
        pb, stub = self._dra(version)
        request = pb.NodePrepareResourcesRequest(claims=_claims(pb, claims))
        return stub.NodePrepareResources(request, timeout=timeout, wait_for_ready=wait_for_ready)

    def prepare_future(
        self, claims: Sequence[Claim], *, version: str = "v1.DRAPlugin", timeout: float = DRA_CALL_TIMEOUT
    ) -> grpc.Future:
        """Start a call without waiting (to observe it blocked)."""
        pb, stub = self._dra(version)
        request = pb.NodePrepareResourcesRequest(claims=_claims(pb, claims))
        return stub.NodePrepareResources.future(request, timeout=timeout)

    def unprepare(
        self, claims: Sequence[Claim], *, version: str = "v1.DRAPlugin", timeout: float = DRA_CALL_TIMEOUT
    ) -> Any:
        pb, stub = self._dra(version)
        request = pb.NodeUnprepareResourcesRequest(claims=_claims(pb, claims))
        return stub.NodeUnprepareResources(request, timeout=timeout)

    def watch_health(self, timeout: float | None = None, *, api: str = "v1") -> Iterator[Any]:
        """The health stream of DRAResourceHealth `api` (v1 or v1alpha1); cancel() the returned iterator to end it."""
        pb, grpc_mod = HEALTH_APIS[api]
        return grpc_mod.DRAResourceHealthStub(self._svc).NodeWatchResources(
            pb.NodeWatchResourcesRequest(), timeout=timeout
        )


def _claims(pb: ModuleType, claims: Sequence[Claim]) -> list[Any]:
    return [pb.Claim(namespace=ns, uid=uid, name=name) for ns, uid, name in claims]
