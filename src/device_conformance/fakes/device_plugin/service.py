"""The v1beta1.DevicePlugin servicer: answers from the shared state, obeys injected faults, logs every call."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import grpc
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from device_conformance.fakes.device_plugin.allocate import container_response, preferred
from device_conformance.fakes.device_plugin.behaviour import Faults
from device_conformance.fakes.device_plugin.calllog import STREAM_SEND, CallLog, CallRecord
from device_conformance.fakes.device_plugin.config import DeviceConfig, DevicePluginConfig
from device_conformance.fakes.device_plugin.state import DeviceState
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2_grpc as pb_grpc


def to_dict(message: Message) -> dict[str, Any]:
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def to_device(device: DeviceConfig) -> pb.Device:
    topology = pb.TopologyInfo(nodes=[pb.NUMANode(ID=n) for n in device.numa_nodes]) if device.numa_nodes else None
    return pb.Device(ID=device.id, health=device.health, topology=topology)


def options_message(config: DevicePluginConfig) -> pb.DevicePluginOptions:
    return pb.DevicePluginOptions(
        pre_start_required=config.options.pre_start_required,
        get_preferred_allocation_available=config.options.get_preferred_allocation_available,
    )


class DevicePluginService(pb_grpc.DevicePluginServicer):
    """One instance per served socket, so the call log can say which socket a call came in on."""

    def __init__(
        self, config: DevicePluginConfig, state: DeviceState, faults: Faults, log: CallLog, socket_name: str
    ) -> None:
        self._config, self._state, self._faults, self._log = config, state, faults, log
        self._socket = socket_name

    def GetDevicePluginOptions(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.DevicePluginOptions:
        return self._unary("GetDevicePluginOptions", request, context, lambda: options_message(self._config))

    def GetPreferredAllocation(
        self, request: pb.PreferredAllocationRequest, context: grpc.ServicerContext
    ) -> pb.PreferredAllocationResponse:
        def answer() -> pb.PreferredAllocationResponse:
            return pb.PreferredAllocationResponse(
                container_responses=[
                    pb.ContainerPreferredAllocationResponse(
                        deviceIDs=preferred(r.available_deviceIDs, r.must_include_deviceIDs, r.allocation_size)
                    )
                    for r in request.container_requests
                ]
            )

        return self._unary("GetPreferredAllocation", request, context, answer)

    def Allocate(self, request: pb.AllocateRequest, context: grpc.ServicerContext) -> pb.AllocateResponse:
        def answer() -> pb.AllocateResponse:
            resource = self._config.resource_name
            return pb.AllocateResponse(
                container_responses=[
                    container_response(self._config.allocate, list(r.devices_ids), resource)
                    for r in request.container_requests
                ]
            )

        return self._unary("Allocate", request, context, answer)

    def PreStartContainer(
        self, request: pb.PreStartContainerRequest, context: grpc.ServicerContext
    ) -> pb.PreStartContainerResponse:
        return self._unary("PreStartContainer", request, context, pb.PreStartContainerResponse)

    def ListAndWatch(self, request: pb.Empty, context: grpc.ServicerContext) -> Iterator[pb.ListAndWatchResponse]:
        record = self._log.start("ListAndWatch", {}, socket=self._socket)
        cancelled = self._cancel_event(context)
        if not self._admit(record, context, cancelled):
            return
        generation = self._state.open_stream()
        sent, version = 0, -1
        try:
            while True:
                update = self._state.next_update(version, generation, cancelled)
                if update is None:
                    self._log.finish(record, response={"sent": sent}, error={"code": "CANCELLED", "message": ""})
                    return
                if update.end:
                    if update.error:
                        self._fail(record, context, update.error.code, update.error.message)
                    else:
                        self._log.finish(record, response={"sent": sent})
                    return
                response = pb.ListAndWatchResponse(devices=[to_device(d) for d in update.devices])
                # Logged before the yield: the generator resumes only when gRPC wants the next message,
                # which can be after the kubelet already acted on this one.
                self._log.event("ListAndWatch", to_dict(response), kind=STREAM_SEND, socket=self._socket)
                version, sent = update.version, sent + 1
                yield response
        finally:
            self._state.close_stream()
            if not record.done:
                self._log.finish(record, response={"sent": sent}, error={"code": "CANCELLED", "message": ""})

    def _unary(self, method: str, request: Message, context: grpc.ServicerContext, answer: Any) -> Any:
        record = self._log.start(method, to_dict(request), socket=self._socket)
        if not self._admit(record, context, self._cancel_event(context)):
            return None
        response = answer()
        self._log.finish(record, response=to_dict(response))
        return response

    def _admit(self, record: CallRecord, context: grpc.ServicerContext, cancelled: threading.Event) -> bool:
        """Apply block and fail faults; False means the caller went away, a failure raises."""
        self._faults.wait_if_blocked(record.method, cancelled)
        if cancelled.is_set():
            self._log.finish(record, error={"code": "CANCELLED", "message": "caller went away while blocked"})
            return False
        failure = self._faults.take_failure(record.method)
        if failure:
            self._fail(record, context, failure.code, failure.message)
        return True

    def _fail(self, record: CallRecord, context: grpc.ServicerContext, code: grpc.StatusCode, message: str) -> None:
        """Log, then end the call with this status (context.abort raises; gRPC turns it into the status)."""
        self._log.finish(record, error={"code": code.name, "message": message})
        context.abort(code, message)

    def _cancel_event(self, context: grpc.ServicerContext) -> threading.Event:
        cancelled = threading.Event()

        def on_done() -> None:
            cancelled.set()
            self._state.wake()

        context.add_callback(on_done)
        return cancelled
