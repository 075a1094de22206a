"""The v1beta1.DevicePlugin servicer: answers from the shared state, obeys injected faults, logs every call."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import grpc
from google.protobuf.message import Message

from device_conformance.fakes.common.calls import STREAM_SEND, CallLog
from device_conformance.fakes.common.faults import Faults, Status
from device_conformance.fakes.common.rpc import Served, end_call, to_dict
from device_conformance.fakes.device_plugin import defects
from device_conformance.fakes.device_plugin.allocate import container_response
from device_conformance.fakes.device_plugin.config import LIST_DELAY, DeviceConfig, DevicePluginConfig
from device_conformance.fakes.device_plugin.state import DeviceState
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2_grpc as pb_grpc

SERVICE = pb.DESCRIPTOR.services_by_name["DevicePlugin"].full_name
METHODS = ("GetDevicePluginOptions", "ListAndWatch", "GetPreferredAllocation", "Allocate", "PreStartContainer")
# The call the plugin makes rather than answers; a fault on it (a crash, a panic) strikes before it is sent.
REGISTER_METHOD = "Register"
CANCELLED = {"code": "CANCELLED", "message": ""}


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
        self._config, self._state, self._log = config, state, log
        self._socket = socket_name
        self._rpc = Served(log, faults, SERVICE, socket_name)
        self._streams_opened = 0

    def GetDevicePluginOptions(self, request: pb.Empty, context: grpc.ServicerContext) -> pb.DevicePluginOptions:
        return self._unary("GetDevicePluginOptions", request, context, lambda: options_message(self._config))

    def GetPreferredAllocation(
        self, request: pb.PreferredAllocationRequest, context: grpc.ServicerContext
    ) -> pb.PreferredAllocationResponse:
        failing = sorted(
            {r.allocation_size for r in request.container_requests} & set(self._config.preferred_fail_sizes)
        )

        def answer() -> pb.PreferredAllocationResponse:
            if "no-preference" in self._config.patterns:
                return pb.PreferredAllocationResponse()
            return pb.PreferredAllocationResponse(
                container_responses=[
                    pb.ContainerPreferredAllocationResponse(
                        deviceIDs=defects.preferred(self._config)(
                            r.available_deviceIDs, r.must_include_deviceIDs, r.allocation_size
                        )
                    )
                    for r in request.container_requests
                ]
            )

        if failing:
            call = self._rpc.start("GetPreferredAllocation", request)
            self._rpc.admit(call, context)
            end_call(
                self._log, call, context, Status("INTERNAL", f"fake preferred allocation failure for size {failing[0]}")
            )
        return self._unary("GetPreferredAllocation", request, context, answer)

    def Allocate(self, request: pb.AllocateRequest, context: grpc.ServicerContext) -> pb.AllocateResponse:
        def answer() -> pb.AllocateResponse:
            defects.crash_on_unknown_ids(self._config, self._state.devices(), request)
            resource = self._config.resource_name
            requests = defects.answered_containers(self._config, list(request.container_requests))
            response = pb.AllocateResponse(
                container_responses=[
                    defects.with_host_dev(
                        self._config, container_response(self._config.allocate, list(r.devices_ids), resource)
                    )
                    for r in requests
                ]
            )
            self._state.hand_out(i for r in request.container_requests for i in r.devices_ids)
            if "list-omits-allocated" in self._config.defects:
                # Listed again LIST_DELAY after the answer, not while the kubelet waits for it: a device gone
                # from the list before the kubelet handled its Allocate answer crashes kubelets up to at least
                # 1.37.1 (a nil *Device read in manager.go allocateContainerResources, allDevices[resource][dev]).
                relist = threading.Timer(LIST_DELAY, self._state.relist)
                relist.daemon = True
                relist.start()
            return response

        refused = defects.refused_ids(self._config, self._state.handed_out(), request)
        if refused:
            call = self._rpc.start("Allocate", request)
            self._rpc.admit(call, context)
            message = f"devices {refused} are already allocated (defect allocate-refuses-handed-out-id)"
            end_call(self._log, call, context, Status("FAILED_PRECONDITION", message))
        return self._unary("Allocate", request, context, answer)

    def PreStartContainer(
        self, request: pb.PreStartContainerRequest, context: grpc.ServicerContext
    ) -> pb.PreStartContainerResponse:
        return self._unary("PreStartContainer", request, context, pb.PreStartContainerResponse)

    def ListAndWatch(self, request: pb.Empty, context: grpc.ServicerContext) -> Iterator[pb.ListAndWatchResponse]:
        call = self._rpc.start("ListAndWatch", request)
        cancelled = self._cancel_event(context)
        self._rpc.admit(call, context)
        generation = self._state.open_stream()
        self._streams_opened += 1
        stream_number = self._streams_opened
        sent, version = 0, -1
        try:
            if "list-empty-then-full" in self._config.patterns:
                # An empty list first; the full one follows LIST_DELAY later (or at once on a device change).
                self._log.event("ListAndWatch", {}, service=SERVICE, kind=STREAM_SEND, socket=self._socket)
                sent += 1
                yield pb.ListAndWatchResponse()
                cancelled.wait(LIST_DELAY)
            while True:
                update = self._state.next_update(version, generation, cancelled)
                if update is None:
                    self._log.finish(call, response={"sent": sent}, error=CANCELLED)
                    return
                if update.end:
                    if update.error:
                        end_call(self._log, call, context, update.error)
                    self._log.finish(call, response={"sent": sent})
                    return
                listed = defects.listed(self._config, update.devices, stream_number, self._state.handed_out())
                response = pb.ListAndWatchResponse(devices=[to_device(d) for d in listed])
                # Logged before the yield: the generator resumes only when gRPC wants the next message,
                # which can be after the kubelet already acted on this one.
                self._log.event(
                    "ListAndWatch", to_dict(response), service=SERVICE, kind=STREAM_SEND, socket=self._socket
                )
                version, sent = update.version, sent + 1
                yield response
        finally:
            self._state.close_stream()
            if not call.done:
                self._log.finish(call, response={"sent": sent}, error=CANCELLED)

    def _unary(
        self, method: str, request: Message, context: grpc.ServicerContext, answer: Callable[[], Message]
    ) -> Message:
        return self._rpc.unary(method, request, context, lambda _: answer())

    def _cancel_event(self, context: grpc.ServicerContext) -> threading.Event:
        cancelled = threading.Event()

        def on_done() -> None:
            cancelled.set()
            self._state.wake()

        context.add_callback(on_done)
        return cancelled
