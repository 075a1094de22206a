"""A tiny stand-in for the kubelet's device manager, for unit tests of the fake device plugin.

It does what the kubelet does on Register (pkg/kubelet/cm/devicemanager/plugin/v1beta1): check the version and resource
name with the kubelet's error texts, dial the plugin back, call GetDevicePluginOptions, then follow
ListAndWatch and keep the latest device list. Starting it deletes the sockets in its directory and
re-creates kubelet.sock, like a kubelet restart.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
import time
from collections.abc import Callable, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from typing import TypeVar

import grpc

from device_conformance.fakes.common.sockets import fits
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2_grpc as pb_grpc
from device_conformance.wait.core import Pending, until

SUPPORTED_VERSIONS = ("v1beta1",)
POLL_INTERVAL = 0.05
T = TypeVar("T")
_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: domain-qualified, not kubernetes.io, valid as "requests.<name>"."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    prefix, _, short = f"requests.{name}".rpartition("/")
    return len(prefix) <= 253 and bool(_DNS_SUBDOMAIN.match(prefix)) and bool(_QUALIFIED_NAME.match(short))


def _wait(what: str, probe: Callable[[], T | Pending], timeout: float) -> T:
    return until(probe, what=what, timeout=timeout, interval=POLL_INTERVAL, max_interval=POLL_INTERVAL)


def go_error_text(err: grpc.RpcError) -> str:
    """How a Go client prints a gRPC error: `rpc error: code = Internal desc = ...`."""
    code = err.code()
    name = "Canceled" if code == grpc.StatusCode.CANCELLED else code.name.title().replace("_", "")
    return f"rpc error: code = {name} desc = {err.details()}"


@dataclass
class StubRegistration:
    version: str
    endpoint: str
    resource_name: str
    options: pb.DevicePluginOptions
    error: str | None = None
    at: float = field(default_factory=time.monotonic)
    # The stub reached the endpoint during Register (the kubelet's dial in client.go Connect succeeded).
    dialled: bool = False


class PluginEndpoint:
    """The stub's connection to one registered plugin; ListAndWatch runs in a thread."""

    def __init__(self, resource_name: str, channel: grpc.Channel, options: pb.DevicePluginOptions) -> None:
        self.resource_name, self.options = resource_name, options
        self._channel, self._stub = channel, pb_grpc.DevicePluginStub(channel)
        self._cond = threading.Condition()
        self.updates: list[list[pb.Device]] = []
        self.update_times: list[float] = []  # time.monotonic() of each response, beside `updates`
        self.opened = time.monotonic()
        self.stream_state = "open"  # then "ended" (clean end), "error" or "closed" (we hung up)
        self.stream_error: tuple[grpc.StatusCode, str] | None = None
        self._stream = self._stub.ListAndWatch(pb.Empty())
        threading.Thread(target=self._follow, name=f"law-{resource_name}", daemon=True).start()

    @property
    def devices(self) -> dict[str, str]:
        """Latest device list as {id: health}."""
        with self._cond:
            return {d.ID: d.health for d in (self.updates[-1] if self.updates else [])}

    def allocate(self, device_ids: Sequence[str], timeout: float = 10.0) -> pb.ContainerAllocateResponse:
        """Allocate for one container, as the kubelet does; returns container_responses[0]."""
        request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=device_ids)])
        return self._stub.Allocate(request, timeout=timeout).container_responses[0]

    def get_preferred_allocation(
        self, available: Sequence[str], must_include: Sequence[str] = (), size: int = 1, timeout: float = 10.0
    ) -> list[str]:
        request = pb.PreferredAllocationRequest(
            container_requests=[
                pb.ContainerPreferredAllocationRequest(
                    available_deviceIDs=available, must_include_deviceIDs=must_include, allocation_size=size
                )
            ]
        )
        return list(self._stub.GetPreferredAllocation(request, timeout=timeout).container_responses[0].deviceIDs)

    def pre_start_container(self, device_ids: Sequence[str], timeout: float = 30.0) -> None:
        self._stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=device_ids), timeout=timeout)

    def wait_for_devices(self, what: str, check: Callable[[dict[str, str]], bool], timeout: float = 10.0) -> None:
        def probe() -> bool | Pending:
            if check(self.devices):
                return True
            return Pending(f"devices {self.devices} after {len(self.updates)} update(s), stream {self.stream_state}")

        _wait(f"{self.resource_name} devices {what}", probe, timeout)

    def settled_list(self, timeout: float, empty_settle: float) -> list[pb.Device]:
        """The device list once it settled: the latest list as soon as one is non-empty, or the (empty) latest
        list when `empty_settle` seconds passed after the first response without a non-empty one. The kubelet
        replaces the resource's whole device set with every response (manager.go genericDeviceUpdateCallback),
        so an empty list followed by the full one leaves the full set. WaitTimeout when no response comes
        within `timeout` of opening the stream."""

        def probe() -> list[pb.Device] | Pending:
            with self._cond:
                updates, times = list(self.updates), list(self.update_times)
            if any(updates):
                return updates[-1]
            if times and time.monotonic() - times[0] >= empty_settle:
                return updates[-1]
            if self.stream_state != "open" and updates:
                return updates[-1]  # nothing more can come
            return Pending(f"{len(updates)} response(s), all empty; stream {self.stream_state}")

        left = max(timeout - (time.monotonic() - self.opened), 0.0)
        _wait(f"the first ListAndWatch response for {self.resource_name}", lambda: True if self.updates else None, left)
        return _wait(f"the ListAndWatch list of {self.resource_name} to settle", probe, empty_settle + 1.0)

    def wait_for_stream_end(self, timeout: float = 10.0) -> str:
        def probe() -> str | Pending:
            if self.stream_state == "open":
                return Pending(f"stream open after {len(self.updates)} update(s)")
            return self.stream_state

        return _wait(f"the ListAndWatch stream of {self.resource_name} to end", probe, timeout)

    def close(self) -> None:
        with self._cond:
            if self.stream_state == "open":
                self.stream_state = "closed"
        self._stream.cancel()
        self._channel.close()

    def _follow(self) -> None:
        try:
            for response in self._stream:
                with self._cond:
                    self.updates.append(list(response.devices))
                    self.update_times.append(time.monotonic())
            state, error = "ended", None
        except grpc.RpcError as err:
            state, error = "error", (err.code(), err.details() or "")
        with self._cond:
            if self.stream_state == "open":
                self.stream_state, self.stream_error = state, error


class KubeletStub(pb_grpc.RegistrationServicer):
    def __init__(self, socket_dir: str, socket_name: str = "kubelet.sock", dial_timeout: float = 10.0) -> None:
        self.socket_dir, self.dial_timeout = socket_dir, dial_timeout
        self.socket_path = os.path.join(socket_dir, socket_name)
        self.registrations: list[StubRegistration] = []
        self.endpoints: dict[str, PluginEndpoint] = {}  # current endpoint per resource name
        self._old: list[PluginEndpoint] = []
        self._server: grpc.Server | None = None
        self._lock = threading.Lock()

    def start(self) -> KubeletStub:
        """Like kubelet start: remove every socket in the directory, then listen on kubelet.sock."""
        os.makedirs(self.socket_dir, exist_ok=True)
        for entry in os.scandir(self.socket_dir):
            if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                os.unlink(entry.path)
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="kubelet-stub"))
        pb_grpc.add_RegistrationServicer_to_server(self, self._server)
        self._server.add_insecure_port(f"unix://{self.socket_path}")
        self._server.start()
        return self

    def stop(self) -> None:
        """Like the kubelet going away: stop serving, drop kubelet.sock, hang up on every plugin."""
        if self._server is not None:
            self._server.stop(0).wait()
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.socket_path)
        with self._lock:
            endpoints, self.endpoints, self._old = [*self.endpoints.values(), *self._old], {}, []
        for endpoint in endpoints:
            endpoint.close()

    def restart(self) -> None:
        self.stop()
        self.start()

    def __enter__(self) -> KubeletStub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def endpoint(self, resource_name: str) -> PluginEndpoint:
        with self._lock:
            if resource_name not in self.endpoints:
                raise KeyError(f"no plugin registered for {resource_name}; have {sorted(self.endpoints)}")
            return self.endpoints[resource_name]

    def wait_for_registration(
        self, count: int = 1, *, ok: bool | None = True, timeout: float = 10.0
    ) -> StubRegistration:
        def probe() -> StubRegistration | Pending:
            regs = [r for r in self.registrations if ok is None or (r.error is None) == ok]
            if len(regs) < count:
                return Pending(f"{len(regs)} matching of {len(self.registrations)} registration(s)")
            return regs[count - 1]

        return _wait(f"registration #{count} (ok={ok}) at the kubelet stub", probe, timeout)

    def Register(self, request: pb.RegisterRequest, context: grpc.ServicerContext) -> pb.Empty:
        registration = StubRegistration(request.version, request.endpoint, request.resource_name, request.options)
        registration.error = self._connect(request, registration)
        self.registrations.append(registration)
        if registration.error:
            context.abort(grpc.StatusCode.UNKNOWN, registration.error)
        return pb.Empty()

    def _connect(self, request: pb.RegisterRequest, registration: StubRegistration) -> str | None:
        """The kubelet's checks and dial-back; returns its error text or None."""
        if request.version not in SUPPORTED_VERSIONS:
            supported = "[" + " ".join(f'"{v}"' for v in SUPPORTED_VERSIONS) + "]"
            return (
                f'requested API version "{request.version}" is not supported by kubelet.'
                f" Supported version is {supported}"
            )
        if not is_extended_resource_name(request.resource_name):
            return f'the ResourceName "{request.resource_name}" is invalid'
        path = os.path.join(self.socket_dir, request.endpoint)
        if not fits(path):
            # Go's net.Dial refuses a path longer than sun_path with EINVAL (syscall sockaddr), at once.
            return f"failed to dial device plugin: dial unix {path}: connect: invalid argument"
        channel = grpc.insecure_channel(f"unix://{path}")
        try:
            grpc.channel_ready_future(channel).result(timeout=self.dial_timeout)
        except grpc.FutureTimeoutError:
            channel.close()
            return "failed to dial device plugin: context deadline exceeded"
        registration.dialled = True
        try:
            options = pb_grpc.DevicePluginStub(channel).GetDevicePluginOptions(pb.Empty(), timeout=10)
        except grpc.RpcError as err:
            channel.close()
            return f"failed to get device plugin options: {go_error_text(err)}"
        with self._lock:
            previous = self.endpoints.get(request.resource_name)
            if previous:
                self._old.append(previous)  # the kubelet keeps an old stream running until it ends
            self.endpoints[request.resource_name] = PluginEndpoint(request.resource_name, channel, options)
        return None
