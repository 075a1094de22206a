"""The DRAPlugin service, once per API version (v1 and v1beta1 share one socket and one implementation)."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import grpc

from device_conformance.fakes.common.calls import CallLog
from device_conformance.fakes.common.faults import Faults, Status
from device_conformance.fakes.common.rpc import Served, end_call
from device_conformance.fakes.dra_driver.claims import ClaimError, ClaimPreparer
from device_conformance.protos.dra.v1 import api_pb2 as v1_pb2
from device_conformance.protos.dra.v1 import api_pb2_grpc as v1_grpc
from device_conformance.protos.dra.v1beta1 import api_pb2 as v1beta1_pb2
from device_conformance.protos.dra.v1beta1 import api_pb2_grpc as v1beta1_grpc

# registration token -> (messages, grpc module); the full service name comes from the descriptor.
VERSIONS: dict[str, tuple[ModuleType, ModuleType]] = {
    "v1.DRAPlugin": (v1_pb2, v1_grpc),
    "v1beta1.DRAPlugin": (v1beta1_pb2, v1beta1_grpc),
}


class DraServicer:
    """NodePrepareResources / NodeUnprepareResources for one version's messages."""

    def __init__(self, pb: ModuleType, preparer: ClaimPreparer, faults: Faults, calls: CallLog, socket: str) -> None:
        self._pb = pb
        self._service = pb.DESCRIPTOR.services_by_name["DRAPlugin"].full_name
        self._has_share_id = "share_id" in pb.Device.DESCRIPTOR.fields_by_name
        self._preparer = preparer
        self._rpc = Served(calls, faults, self._service, socket)

    def NodePrepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:
        if "fetch-claims-first" in self._preparer.patterns:
            self._fetch_claims_first(request, context)
        if "prepare-one-claim-per-call" in self._preparer.defects and len(request.claims) > 1:
            self._refuse(request, context, f"one claim per call, got {len(request.claims)}")
        return self._serve("NodePrepareResources", request, context, self._prepare)

    def _fetch_claims_first(self, request: Any, context: grpc.ServicerContext) -> None:
        """Pattern fetch-claims-first: every claim is read before any is prepared, and one that cannot be read
        fails the whole call, as k8s.io/dynamic-resource-allocation kubeletplugin's
        nodePluginImplementation.NodePrepareResources does ("get resource claims: %w" from getResourceClaims;
        a Go error from a handler reaches the caller as gRPC code UNKNOWN)."""
        errors = [self._preparer.fetch_error(c.namespace, c.uid, c.name) for c in request.claims]
        first = next((e for e in errors if e), None)
        if first is not None:
            self._refuse(request, context, f"get resource claims: {first}")

    def _refuse(self, request: Any, context: grpc.ServicerContext, message: str) -> None:
        """Fail the whole NodePrepareResources call (a Go handler's error reaches the caller as UNKNOWN)."""
        call = self._rpc.start("NodePrepareResources", request)
        self._rpc.admit(call, context, [c.uid for c in request.claims])
        end_call(self._rpc.log, call, context, Status("UNKNOWN", message))

    def NodeUnprepareResources(self, request: Any, context: grpc.ServicerContext) -> Any:
        return self._serve("NodeUnprepareResources", request, context, self._unprepare)

    def _serve(self, method: str, request: Any, context: grpc.ServicerContext, answer: Callable[..., Any]) -> Any:
        uids = [c.uid for c in request.claims]
        return self._rpc.unary(method, request, context, lambda claim_errors: answer(request, claim_errors), uids)

    def _prepare(self, request: Any, claim_errors: dict[str, str]) -> Any:
        response = self._pb.NodePrepareResourcesResponse()
        for claim in request.claims:
            entry = response.claims[claim.uid]  # creates the entry even when it stays empty
            if claim.uid in claim_errors:
                entry.error = claim_errors[claim.uid]
                continue
            transient = self._preparer.transient_error("NodePrepareResources", claim.uid)
            if transient:
                entry.error = transient
                continue
            try:
                devices = self._preparer.prepare(claim.namespace, claim.uid, claim.name)
            except ClaimError as exc:
                entry.error = str(exc)
                continue
            for dev in devices:
                fields = {k: v for k, v in dev.items() if k != "share_id" or self._has_share_id}
                entry.devices.add(**fields)
        return response

    def _unprepare(self, request: Any, claim_errors: dict[str, str]) -> Any:
        response = self._pb.NodeUnprepareResourcesResponse()
        for claim in request.claims:
            entry = response.claims[claim.uid]
            if claim.uid in claim_errors:
                entry.error = claim_errors[claim.uid]
                continue
            transient = self._preparer.transient_error("NodeUnprepareResources", claim.uid)
            if transient:
                entry.error = transient
                continue
            try:
                self._preparer.unprepare(claim.uid)
            except ClaimError as exc:
                entry.error = str(exc)
        return response


def add_dra_services(server: grpc.Server, preparer: ClaimPreparer, faults: Faults, calls: CallLog, socket: str) -> None:
    """Serve v1 and v1beta1 whatever is advertised: the call log then shows which one the kubelet picked."""
    for pb, grpc_mod in VERSIONS.values():
        grpc_mod.add_DRAPluginServicer_to_server(DraServicer(pb, preparer, faults, calls, socket), server)
