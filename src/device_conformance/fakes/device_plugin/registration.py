"""Calling the kubelet's v1beta1.Registration/Register, and recording what it answered."""

from __future__ import annotations

import logging

import grpc

from device_conformance.fakes.common.calls import REGISTER, Call, CallLog
from device_conformance.fakes.common.faults import Faults
from device_conformance.fakes.common.rpc import to_dict
from device_conformance.fakes.device_plugin.config import DevicePluginConfig
from device_conformance.fakes.device_plugin.service import REGISTER_METHOD, options_message
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2_grpc as pb_grpc

logger = logging.getLogger(__name__)
SERVICE = pb.DESCRIPTOR.services_by_name["Registration"].full_name


def register(
    config: DevicePluginConfig,
    log: CallLog,
    faults: Faults,
    *,
    socket_name: str,
    version: str,
    resource_name: str,
    reason: str,
) -> Call:
    """Register once, synchronously. The kubelet dials our socket back inside this call, so we must
    already be serving. Failures are recorded, not raised: tests assert on the kubelet's error text. A crash or
    panic fault on Register (register-crash) strikes first: nothing is sent, nothing logged."""
    faults.admit(REGISTER_METHOD, is_active=lambda: True)
    options = pb.DevicePluginOptions() if "register-without-options" in config.patterns else options_message(config)
    request = pb.RegisterRequest(version=version, endpoint=socket_name, resource_name=resource_name, options=options)
    call = log.start(REGISTER_METHOD, to_dict(request), service=SERVICE, kind=REGISTER, socket=socket_name)
    try:
        with grpc.insecure_channel(f"unix://{config.kubelet_socket_path}") as channel:
            # No wait_for_ready: a missing or dead kubelet.sock fails at once with UNAVAILABLE.
            pb_grpc.RegistrationStub(channel).Register(request, timeout=config.register_timeout)
    except grpc.RpcError as err:
        log.finish(call, response={"reason": reason}, error={"code": err.code().name, "message": err.details() or ""})
    else:
        log.finish(call, response={"reason": reason})
    logger.info(
        "Register %s as %s (%s, %s): %s",
        socket_name,
        resource_name,
        version,
        reason,
        "ok" if call.ok else f"{(call.error or {}).get('code')}: {(call.error or {}).get('message')}",
    )
    return call
