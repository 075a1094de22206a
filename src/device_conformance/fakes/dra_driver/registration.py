"""The plugin-watcher side: pluginregistration.Registration on <registry_dir>/<driver>-reg.sock."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import Message

from device_conformance.fakes.common.calls import CallLog
from device_conformance.fakes.common.faults import Faults
from device_conformance.fakes.common.rpc import Served
from device_conformance.fakes.dra_driver.config import DriverConfig
from device_conformance.protos.pluginregistration.v1 import api_pb2, api_pb2_grpc

SERVICE = "pluginregistration.Registration"
PLUGIN_TYPE = "DRAPlugin"


class RegistrationServicer(api_pb2_grpc.RegistrationServicer):
    """GetInfo answers with the kubelet's view of the endpoint; notifications land in the call log."""

    def __init__(
        self,
        config: DriverConfig,
        faults: Faults,
        calls: CallLog,
        on_notify: Callable[[api_pb2.RegistrationStatus], None] | None = None,
    ) -> None:
        self._config = config
        self._rpc = Served(calls, faults, SERVICE, os.path.basename(config.registration_socket))
        self._on_notify = on_notify

    def GetInfo(self, request: api_pb2.InfoRequest, context: grpc.ServicerContext) -> api_pb2.PluginInfo:
        return self._serve("GetInfo", request, context, self._info)

    def _info(self) -> api_pb2.PluginInfo:
        return api_pb2.PluginInfo(
            type=PLUGIN_TYPE,
            name=self._config.driver_name,
            endpoint="" if "dra-on-registration-socket" in self._config.patterns else self._config.endpoint,
            supported_versions=self._config.advertised_versions,
        )

    def NotifyRegistrationStatus(
        self, request: api_pb2.RegistrationStatus, context: grpc.ServicerContext
    ) -> api_pb2.RegistrationStatusResponse:
        return self._serve("NotifyRegistrationStatus", request, context, lambda: self._notified(request))

    def _notified(self, request: api_pb2.RegistrationStatus) -> api_pb2.RegistrationStatusResponse:
        if self._on_notify is not None:
            self._on_notify(request)
        return api_pb2.RegistrationStatusResponse()

    def _serve(self, method: str, request: Message, context: grpc.ServicerContext, answer: Any) -> Any:
        return self._rpc.unary(method, request, context, lambda _: answer())


def add_to_server(servicer: RegistrationServicer, server: grpc.Server) -> None:
    api_pb2_grpc.add_RegistrationServicer_to_server(servicer, server)
