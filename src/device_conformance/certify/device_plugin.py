"""`certify device-plugin`: the tool serves kubelet.sock like the kubelet's device manager and checks a
device plugin (API v1beta1) clause by clause (clauses.DEVICE_PLUGIN_CLAUSES).

The kubelet side is fakes/kubelet_stub.KubeletStub: it removes the sockets in the directory and serves
kubelet.sock as a starting kubelet does, checks Register as the kubelet does and follows ListAndWatch.
Steps run in catalogue order through certify/crash.CrashWatch: a subject the tool started that crashes costs
the clause it crashed in one FAIL quoting its log, and is started again (`_recover` waits for its new
registration) so that later clauses are judged on their own; one that crashes again at start-up leaves the
clauses that need it NOT APPLICABLE. The one that may kill the subject (an unknown ID) runs late.

ListAndWatch clauses judge the *settled* list (PluginEndpoint.settled_list): the kubelet replaces the resource's
device set with every response, so an empty first list followed by the full one is the full set.
"""

from __future__ import annotations

import os
import stat
import time
import uuid
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path

import grpc

from device_conformance.certify import limits
from device_conformance.certify.clauses import DEVICE_PLUGIN_CLAUSES, DP_SERVER, Clause
from device_conformance.certify.crash import CrashWatch
from device_conformance.certify.exchange import rpc_error, show
from device_conformance.certify.subject import SubjectProcess
from device_conformance.certify.verdicts import (
    Certification,
    ClauseFailed,
    Evidence,
    NotApplicable,
    Subject,
)
from device_conformance.core.errors import BadInput, WaitTimeout
from device_conformance.fakes.common.sockets import SUN_PATH_MAX, fits, log_paths, sun_path_trouble
from device_conformance.fakes.kubelet_stub import (
    SUPPORTED_VERSIONS,
    KubeletStub,
    PluginEndpoint,
    StubRegistration,
    is_extended_resource_name,
)
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2 as pb
from device_conformance.protos.deviceplugin.v1beta1 import api_pb2_grpc as pb_grpc
from device_conformance.wait.core import Abort, Pending, until

API_VERSIONS = ["deviceplugin/v1beta1 (v1beta1.Registration, v1beta1.DevicePlugin)"]
HEALTH_VALUES = ("Healthy", "Unhealthy")
# How long a ListAndWatch stream may list no devices before the empty list counts as its answer. The kubelet
# replaces the resource's device set with each response (manager.go genericDeviceUpdateCallback) and reports
# capacity in the node status only every nodeStatusUpdateFrequency (10 s by default), so a full list that
# follows an empty one within a few seconds never reaches the scheduler as zero. A non-empty list settles at once.
EMPTY_LIST_SETTLE = 3.0
# Steps that judge only what the kubelet side recorded (the RegisterRequest, the kubelet's dial during Register):
# a crash while they run is charged to the next clause that talks to the subject (certify/crash.py).
RECORD_ONLY = ("DP-REG-VERSION", "DP-REG-ENDPOINT", "DP-REG-RESOURCE")


@dataclass
class DevicePluginTarget:
    socket_dir: str
    resource: str | None = None
    command: str | None = None
    name: str = ""
    version: str = ""
    workdir: Path = Path(".")
    reregister_timeout: float = limits.REREGISTER_TIMEOUT
    # The socket file name the plugin will register (when the user knows it): its full path is checked against
    # sun_path before anything starts.
    endpoint: str = ""


class DevicePluginCertifier:
    def __init__(self, target: DevicePluginTarget) -> None:
        self.t = target
        self.stub = KubeletStub(target.socket_dir, dial_timeout=limits.DP_DIAL_TIMEOUT)
        self.proc = SubjectProcess(target.command, target.workdir / "subject.log") if target.command else None
        self.registration: StubRegistration | None = None
        self._judged_resource: str | None = None  # the resource of the registration judged (_first_registration)
        self.endpoint: PluginEndpoint | None = None
        self.options: pb.DevicePluginOptions | None = None
        self._settled: list[pb.Device] | None = None
        self._allocate_seconds = 0.0  # the slowest Allocate answer so far (DP-CONCURRENT's per-call wait)
        self._channels: list[grpc.Channel] = []
        self._never_registered = False
        self._no_registration = ""  # why the first registration never came
        # The subject cannot bind its own socket, a name no kubelet could dial: DP-REG-ENDPOINT's FAIL, the rest
        # NOT APPLICABLE (nothing registered). The evidence of the wait for the registration goes with the FAIL.
        self._unbindable: list[str] = []
        # The subject could not bind its socket in --socket-dir for sun_path (a name the kubelet could dial in its
        # own directory): the user's input, raised as BadInput once the run is stopped.
        self._socket_dir_too_long: BadInput | None = None
        self.crash = CrashWatch(self.proc, self._recover)

    # -- the run ------------------------------------------------------------------------------------------

    def run(self) -> Certification:
        subject = Subject("device-plugin", self.t.name or self.t.resource or "device plugin", self.t.version)
        subject.command = self.t.command or ""
        cert = Certification(subject, API_VERSIONS)
        steps: dict[str, Callable[[Evidence], str | None]] = {
            "DP-REG-VERSION": self.reg_version,
            "DP-REG-ENDPOINT": self.reg_endpoint,
            "DP-REG-RESOURCE": self.reg_resource,
            "DP-OPTIONS": self.get_options,
            "DP-LAW-FIRST": self.law_first,
            "DP-LAW-UNIQUE": self.law_unique,
            "DP-LAW-HEALTH": self.law_health,
            "DP-LAW-TOPOLOGY": self.law_topology,
            "DP-LAW-STABLE": self.law_stable,
            "DP-ALLOC": self.allocate,
            "DP-ALLOC-MULTI": self.allocate_multi,
            "DP-PREFERRED": self.preferred,
            "DP-PRESTART": self.prestart,
            "DP-CONCURRENT": self.concurrent,
            "DP-ALLOC-UNKNOWN": self.allocate_unknown,
            "DP-REREGISTER": self.reregister,
        }
        order = {clause.id: clause for clause in DEVICE_PLUGIN_CLAUSES}
        assert set(order) == set(steps), "every clause has exactly one step"
        check_socket_paths(self.t.socket_dir, self.t.endpoint)
        refuse_live_kubelet(self.stub.socket_path)
        self.stub.start()
        try:
            if self.proc:
                self.proc.start()
            for clause_id, step in steps.items():
                guarded = self._guarded(order[clause_id], step)
                uses_subject = clause_id not in RECORD_ONLY
                cert.results.append(self.crash.run(order[clause_id], guarded, uses_subject=uses_subject))
                if self._socket_dir_too_long:
                    break
        finally:
            self._close()
            if self.proc:
                cert.notes.append(f"subject process: started {self.proc.starts} time(s), {self.proc.stop()}")
                cert.notes.append(f"subject log: {self.proc.log_path}")
            self.stub.stop()
        if self._socket_dir_too_long:
            raise self._socket_dir_too_long
            cert.finished = cert.started + sum(r.seconds for r in cert.results)
        cert.results.sort(key=lambda r: list(order).index(r.clause.id))
        return cert

    def _guarded(self, clause: Clause, step: Callable[[Evidence], str | None]) -> Callable[[Evidence], str | None]:
        """Every step after registration needs a registration; without one it fails saying so."""

        def guarded(ev: Evidence) -> str | None:
            if self.registration is None:
                self.crash.check_up()  # a subject that crashed at start-up never registers: nothing to wait for
            if self.registration is None and (self._never_registered or not self._first_registration(ev)):
                self._never_registered = True
                if self._unbindable:
                    self._charge_unbindable(clause, ev)
                raise ClauseFailed(f"no RegisterRequest reached kubelet.sock ({self._no_registration})")
            return step(ev)

        return guarded

    def _charge_unbindable(self, clause: Clause, ev: Evidence) -> None:
        """A socket name no kubelet could dial breaks DP-REG-ENDPOINT's rule (the kubelet dials socketDir/endpoint
        during Register, within sun_path): that clause FAILs; every other one, DP-REG-VERSION included, cannot be
        judged with nothing registered. Through CrashWatch as any step: a subject that exited on it is charged
        to DP-REG-ENDPOINT, the first clause that FAILs (DP-REG-VERSION, record-only and NOT APPLICABLE, passes the
        crash on), and the clauses after it are NOT APPLICABLE when it dies again at start-up."""
        if clause.id != "DP-REG-ENDPOINT":
            raise NotApplicable("nothing registered: the subject cannot bind its socket (DP-REG-ENDPOINT)")
        ev.extend(self._unbindable)
        raise ClauseFailed(f"no RegisterRequest reached kubelet.sock ({self._no_registration})")

    def _certified_resource(self) -> str | None:
        """The resource under certification: the one judged once chosen (_first_registration), else --resource,
        else the first one the subject registered. One process may register several, each on a socket of its own
        (NVIDIA k8s-device-plugin: one plugin per resource of its mixed MIG strategy, internal/plugin/server.go);
        the kubelet keeps an endpoint per resource name (pkg/kubelet/cm/devicemanager/manager.go
        PluginConnected), so each is judged alone."""
        first = self.stub.registrations[0].resource_name if self.stub.registrations else None
        return self._judged_resource or self.t.resource or first

    def _registrations(self, resource: str | None = None) -> list[StubRegistration]:
        """Registrations of `resource` (default: the certified one) so far, in order; every one for "" (any)."""
        wanted = self._certified_resource() if resource is None else resource
        return [r for r in list(self.stub.registrations) if not wanted or r.resource_name == wanted]

    def _wait_registration(self, count: int, timeout: float, resource: str | None = None) -> StubRegistration:
        """Registration number `count` (accepted or not) of `resource` (as _registrations); gives up at once when our
        subject exited."""

        def probe() -> StubRegistration | Pending:
            mine = self._registrations(resource)
            if len(mine) >= count:
                return mine[count - 1]
            if self.proc and not self.proc.running():
                raise Abort(f"the subject exited ({self.proc.exit_status()}) before registering")
            seen = sorted({r.resource_name for r in self.stub.registrations})
            return Pending(f"{len(mine)} registration(s)" + (f"; resources registered: {seen}" if seen else ""))

        of = resource if resource is not None else self._certified_resource()
        what = f"Register #{count}" + (f" of {of}" if of else "") + " at kubelet.sock"
        return until(probe, what=what, timeout=timeout, interval=0.05, max_interval=0.2)

    def _first_registration(self, ev: Evidence) -> bool:
        """The registration to judge: the first of --resource (another resource's first registration may come
        before it: a process registering several registers them one after the other), else the subject's first."""
        try:
            first = self._wait_registration(1, limits.REGISTER_TIMEOUT, resource="")
        except (Abort, WaitTimeout) as exc:  # the log tail comes with the FAIL (certify/crash.py)
            ev.add(str(exc))
            self._no_registration = self._bind_failure() or str(exc).splitlines()[0]
            if self._unbindable:
                self._unbindable = [str(exc), *self._unbindable]
            return False
        self.registration = first
        wanted = self.t.resource
        if wanted and first.resource_name != wanted:
            try:
                self.registration = self._wait_registration(1, limits.RESOURCE_AFTER_ANOTHER, resource=wanted)
            except (Abort, WaitTimeout) as exc:  # DP-REG-RESOURCE FAILs on the name; the rest judge what came
                ev.add(
                    f"certifier: no Register of {wanted} within {limits.RESOURCE_AFTER_ANOTHER:.0f}s of the first "
                    f"one, of {first.resource_name} ({str(exc).splitlines()[0]}): judging that one"
                )
        self._judged_resource = self.registration.resource_name
        return True

    def _bind_failure(self) -> str | None:
        """Why the subject did not register when its log says a socket path exceeds sun_path. A socket name the
        kubelet could dial in its own directory (/var/lib/kubelet/device-plugins/<name> within 107 bytes) makes
        it the user's --socket-dir (self._socket_dir_too_long, BadInput); a longer one is the subject's: no node
        could reach it (DP-REG-ENDPOINT's rule: self._unbindable)."""
        if not self.proc:
            return None
        log = "\n".join(self.proc.log_tail(60))
        trouble = sun_path_trouble(log)
        if not trouble:
            return None
        here = self.t.socket_dir.rstrip("/")
        names = sorted({os.path.basename(p) for p in log_paths(log) if os.path.dirname(p) == here}, key=len)
        kubelet_room = SUN_PATH_MAX - len(os.fsencode(KUBELET_DIR)) - 1
        if names and len(os.fsencode(names[-1])) > kubelet_room:
            self._unbindable = ["the subject's log:", *trouble.splitlines()]
            return (
                f"its socket {names[-1]!r} ({len(os.fsencode(names[-1]))} bytes) cannot be bound: a Unix socket path "
                f"holds at most {SUN_PATH_MAX} bytes (sun_path, unix(7)), and on a node the kubelet dials "
                f"{KUBELET_DIR}/{names[-1]}, over it too ({DP_SERVER}: Register dials socketDir/endpoint)"
            )
        size = len(os.fsencode(self.t.socket_dir))
        named = f", its socket name {names[-1]!r} {len(os.fsencode(names[-1]))} bytes" if names else ""
        self._socket_dir_too_long = BadInput(
            f"the subject could not bind its socket in --socket-dir {self.t.socket_dir} ({size} bytes{named}): a "
            f"Unix socket path holds at most {SUN_PATH_MAX} bytes (sun_path, unix(7)); its log:\n{trouble}",
            f"certify in a --socket-dir no longer than the kubelet's own {KUBELET_DIR} ({len(KUBELET_DIR)} bytes), "
            "e.g. $(mktemp -d /tmp/dp-XXXXXX): a socket name that works on a node then works here",
        )
        return f"the subject could not bind its socket in --socket-dir {self.t.socket_dir} (sun_path)"

    def _recover(self, ev: Evidence, restart: Callable[[], str]) -> None:
        """CrashWatch's callback: start the subject again and wait for its new registration."""
        count = len(self._registrations())
        self._forget_connection()
        restart()
        self.registration = self._wait_registration(count + 1, limits.REGISTER_TIMEOUT)
        self._never_registered, self._unbindable = False, []
        ev.add(f"certifier: the restarted subject registered (#{count + 1}, {self.registration.error or 'accepted'})")

    def _forget_connection(self) -> None:
        """Drop what belonged to the previous subject process: channels, its stream follower, cached answers."""
        self._close()
        self._channels, self.endpoint, self.options, self._settled = [], None, None, None

    def _close(self) -> None:
        for channel in self._channels:
            channel.close()
        if self.endpoint and self.endpoint not in self.stub.endpoints.values():
            self.endpoint.close()

    # -- helpers ------------------------------------------------------------------------------------------

    def _show_registration(self, ev: Evidence, reg: StubRegistration) -> None:
        request = pb.RegisterRequest(
            version=reg.version, endpoint=reg.endpoint, resource_name=reg.resource_name, options=reg.options
        )
        ev.add(f"-> Register {show(request)}")
        ev.add(f"<- kubelet {'accepted' if reg.error is None else 'rejected: ' + reg.error}")

    def _channel(self) -> grpc.Channel:
        assert self.registration is not None
        if self.proc and not self.proc.running():  # no connection to wait for (CrashWatch reports the crash)
            raise ClauseFailed(f"the subject is not running ({self.proc.exit_status()})")
        path = os.path.join(self.t.socket_dir, self.registration.endpoint)
        channel = grpc.insecure_channel(f"unix://{path}")
        self._channels.append(channel)
        try:
            grpc.channel_ready_future(channel).result(timeout=limits.DP_DIAL_TIMEOUT)
        except grpc.FutureTimeoutError as exc:
            raise ClauseFailed(f"{path} did not accept a connection within {limits.DP_DIAL_TIMEOUT:.0f}s") from exc
        return channel

    def _stub(self) -> pb_grpc.DevicePluginStub:
        return pb_grpc.DevicePluginStub(self._channel())

    def _endpoint(self) -> PluginEndpoint:
        """The ListAndWatch follower: the kubelet stub's when it accepted the plugin, else our own."""
        if self.endpoint is None:
            assert self.registration is not None
            if self.registration.error is None:
                self.endpoint = self.stub.endpoint(self.registration.resource_name)
            else:
                self.endpoint = PluginEndpoint(
                    self.registration.resource_name, self._channel(), pb.DevicePluginOptions()
                )
        return self.endpoint

    def _settled_list(self) -> list[pb.Device]:
        """The first stream's settled list (see PluginEndpoint.settled_list), waited for once."""
        if self._settled is None:
            self._settled = settle(self._endpoint())
        return list(self._settled)

    def _usable_ids(self) -> list[str]:
        """Distinct advertised IDs, healthy ones first (the kubelet allocates only healthy devices)."""
        devices = self._settled_list()
        ids = list(dict.fromkeys(d.ID for d in devices if d.health == "Healthy" and d.ID))
        ids += [i for i in dict.fromkeys(d.ID for d in devices if d.ID) if i not in ids]
        return ids

    def _options(self) -> pb.DevicePluginOptions:
        if self.options is None:
            try:
                self.options = self._stub().GetDevicePluginOptions(pb.Empty(), timeout=limits.DP_RPC_TIMEOUT)
            except grpc.RpcError as err:
                self.crash.after_broken_call(err)
                raise
        return self.options

    # -- registration -------------------------------------------------------------------------------------

    def reg_version(self, ev: Evidence) -> str:
        reg = self.registration
        assert reg is not None
        self._show_registration(ev, reg)
        if reg.version not in SUPPORTED_VERSIONS:
            raise ClauseFailed(f"version {reg.version!r}; the kubelet supports {list(SUPPORTED_VERSIONS)}")
        return f"version {reg.version!r}"

    def reg_endpoint(self, ev: Evidence) -> str:
        reg = self.registration
        assert reg is not None
        path = os.path.join(self.t.socket_dir, reg.endpoint)
        ev.add(f"endpoint {reg.endpoint!r} -> {path} ({len(os.fsencode(path))} bytes)")
        if not reg.endpoint or "/" in reg.endpoint:
            raise ClauseFailed(f"endpoint {reg.endpoint!r} is not a file name in {self.t.socket_dir}")
        if not fits(path):
            raise ClauseFailed(too_long(path, "the endpoint"))
        if reg.dialled:  # the kubelet's own dial during Register reached it (client.go Connect)
            return f"{path} is a socket the kubelet dialled during Register"
        try:
            is_socket = stat.S_ISSOCK(os.stat(path).st_mode)
        except FileNotFoundError:
            is_socket = False
        if not is_socket:
            raise ClauseFailed(f"{path} is not a Unix socket")
        if reg.error and reg.error.startswith("failed to dial"):
            raise ClauseFailed(f"the kubelet could not dial the endpoint during Register: {reg.error}")
        self._channel()
        return f"{path} is a socket that accepts connections"

    def reg_resource(self, ev: Evidence) -> str:
        reg = self.registration
        assert reg is not None
        ev.add(f"resource_name {reg.resource_name!r}; expected {self.t.resource or '(any valid name)'}")
        if not is_extended_resource_name(reg.resource_name):
            raise ClauseFailed(f"{reg.resource_name!r} is not a valid extended resource name")
        registered = {r.resource_name for r in self.stub.registrations}
        others = sorted(registered - {reg.resource_name})
        if self.t.resource and reg.resource_name != self.t.resource:
            raise ClauseFailed(
                f"registered {reg.resource_name!r}, expected {self.t.resource!r} (resources registered: "
                f"{sorted(registered)})"
            )
        if others:
            ev.add(
                f"note: the subject also registered {others}, each a resource of its own (judged by a run with its "
                "--resource)"
            )
        also = f"; the subject also registered {others}" if others else ""
        return f"{reg.resource_name!r} is a valid extended resource name{also}"

    def get_options(self, ev: Evidence) -> str:
        reg = self.registration
        assert reg is not None
        if reg.error and reg.error.startswith("failed to get device plugin options"):
            # The kubelet calls GetDevicePluginOptions right after dialling, inside Register (manager.go
            # PluginConnected); our stub does the same, so a plugin that breaks on it broke there.
            self._show_registration(ev, reg)
            if self.proc:
                self.proc.exited_within(limits.EXIT_AFTER_BROKEN_CALL)
            raise ClauseFailed(f"the kubelet's GetDevicePluginOptions during Register failed: {reg.error}")
        try:
            options = self._options()
        except grpc.RpcError as err:
            raise ClauseFailed(f"GetDevicePluginOptions failed: {rpc_error(err)}") from err
        ev.add(f"-> GetDevicePluginOptions {{}}\n<- {show(options)}")
        ev.add(f"Register options: {show(reg.options)}")
        if options != reg.options:
            # Not judged: the kubelet never reads RegisterRequest.options, it keeps this answer (manager.go
            # PluginConnected), so the options in force are these.
            ev.add("note: Register carried other options; the kubelet uses GetDevicePluginOptions' answer")
            return f"answered {show(options)}; Register carried {show(reg.options)}, which the kubelet does not read"
        return "answered, same options as in Register"

    # -- ListAndWatch -------------------------------------------------------------------------------------

    def _show_list(self, ev: Evidence) -> list[pb.Device]:
        devices = self._settled_list()
        show_responses(ev, self._endpoint(), "")
        return devices

    def law_first(self, ev: Evidence) -> str:
        devices = self._show_list(ev)
        endpoint = self._endpoint()
        first = endpoint.update_times[0] - endpoint.opened
        settled = f"settled list: {len(devices)} device(s) {sorted(d.ID for d in devices)}"
        return f"first response after {first:.1f}s with {len(endpoint.updates[0])} device(s); {settled}"

    def law_unique(self, ev: Evidence) -> str:
        self._show_list(ev)
        for n, update in enumerate(list(self._endpoint().updates), 1):
            ids = [d.ID for d in update]
            dupes = sorted({i for i in ids if ids.count(i) > 1})
            if dupes or "" in ids:
                raise ClauseFailed(f"response #{n} lists IDs {ids}: duplicated {dupes}, empty {'' in ids}")
        return "every response lists each ID once"

    def law_health(self, ev: Evidence) -> str:
        self._show_list(ev)
        for n, update in enumerate(list(self._endpoint().updates), 1):
            bad = {d.ID: d.health for d in update if d.health not in HEALTH_VALUES}
            if bad:
                raise ClauseFailed(f"response #{n}: health values {bad}; allowed {list(HEALTH_VALUES)}")
        return "every health value is Healthy or Unhealthy"

    def law_topology(self, ev: Evidence) -> str:
        devices = self._show_list(ev)
        with_topology = [d for d in devices if d.HasField("topology")]
        for device in with_topology:
            nodes = [n.ID for n in device.topology.nodes]
            if len(set(nodes)) != len(nodes) or any(n < 0 for n in nodes):
                raise ClauseFailed(f"device {device.ID!r} has NUMA nodes {nodes}")
        if not with_topology:
            raise NotApplicable("no device reports topology")
        return f"{len(with_topology)} device(s) with well-formed NUMA nodes"

    def law_stable(self, ev: Evidence) -> str:
        """Settled list against settled list: each response replaces the device set, so only where a
        stream settles matters (an empty first response is no instability)."""
        first = sorted({d.ID for d in self._show_list(ev)})
        assert self.registration is not None
        second = PluginEndpoint(self.registration.resource_name, self._channel(), pb.DevicePluginOptions())
        try:
            again = sorted({d.ID for d in settle(second, "second ListAndWatch stream")})
        finally:
            show_responses(ev, second, " (second stream)")
            second.close()
        if second.stream_error and not second.updates:
            raise ClauseFailed(f"second ListAndWatch stream: {second.stream_error[0].name}: {second.stream_error[1]}")
        if again != first:
            raise ClauseFailed(f"first stream settled on {first}, a second stream on {again}")
        return f"both streams settle on {first}"

    # -- Allocate and friends -----------------------------------------------------------------------------

    def _allocate(self, ev: Evidence, containers: list[list[str]]) -> pb.AllocateResponse:
        request = pb.AllocateRequest(
            container_requests=[pb.ContainerAllocateRequest(devices_ids=ids) for ids in containers]
        )
        ev.add(f"-> Allocate {show(request)}")
        started = time.monotonic()
        try:
            response = self._stub().Allocate(request, timeout=limits.DP_ALLOCATE_TIMEOUT)
        except grpc.RpcError as err:
            ev.add(f"<- error {rpc_error(err)}")
            self.crash.after_broken_call(err)
            raise ClauseFailed(f"Allocate {containers} failed: {rpc_error(err)}") from err
        took = time.monotonic() - started
        self._allocate_seconds = max(self._allocate_seconds, took)
        ev.add(f"<- {show(response)} ({took:.2f}s)")
        return response

    def allocate(self, ev: Evidence) -> str:
        ids = self._usable_ids()
        if not ids:
            raise NotApplicable("the plugin advertises no devices")
        response = self._allocate(ev, [ids[:1]])
        if len(response.container_responses) != 1:
            raise ClauseFailed(f"{len(response.container_responses)} container responses for 1 container request")
        return f"Allocate [{ids[0]}]: one container response"

    def allocate_multi(self, ev: Evidence) -> str:
        ids = self._usable_ids()
        if len(ids) < 2:
            raise NotApplicable(f"needs two devices, the plugin advertises {ids}")
        response = self._allocate(ev, [ids[:1], ids[1:2]])
        if len(response.container_responses) != 2:
            raise ClauseFailed(f"{len(response.container_responses)} container responses for 2 container requests")
        return "two container requests, two container responses"

    def preferred(self, ev: Evidence) -> str:
        if not self._options().get_preferred_allocation_available:
            raise NotApplicable("get_preferred_allocation_available is false")
        ids = self._usable_ids()
        if len(ids) < 2:
            raise NotApplicable(f"needs two devices, the plugin advertises {ids}")
        # The last ID is required and only one is asked for: a plugin that ignores must_include or size shows.
        must, size = ids[-1:], 1
        request = pb.PreferredAllocationRequest(
            container_requests=[
                pb.ContainerPreferredAllocationRequest(
                    available_deviceIDs=ids, must_include_deviceIDs=must, allocation_size=size
                )
            ]
        )
        ev.add(f"-> GetPreferredAllocation {show(request)}")
        try:
            response = self._stub().GetPreferredAllocation(request, timeout=limits.DP_ALLOCATE_TIMEOUT)
        except grpc.RpcError as err:
            self.crash.after_broken_call(err)
            raise ClauseFailed(f"GetPreferredAllocation failed: {rpc_error(err)}") from err
        ev.add(f"<- {show(response)}")
        if len(response.container_responses) > 1:
            raise ClauseFailed(f"{len(response.container_responses)} container responses for 1 request")
        chosen = list(response.container_responses[0].deviceIDs) if response.container_responses else []
        if not chosen:
            # Allowed: the kubelet takes no preference and picks the devices itself (manager.go
            # callGetPreferredAllocationIfAvailable, devicesToAllocate's fallback), as for upstream's own stub
            # (plugin/v1beta1/stub.go defaultGetPreferredAllocFunc answers an empty response).
            raise NotApplicable(
                "answered no preference (an empty response): allowed, the kubelet then picks the devices itself; "
                "there is no preference to judge"
            )
        problems = []
        # Fewer IDs than allocation_size are allowed too: the kubelet allocates the rest itself ("or didn't return a
        # large enough one"); more, or one twice, are not the allocation of that size the API asks for.
        if len(chosen) > size or len(set(chosen)) != len(chosen):
            problems.append(f"{len(chosen)} IDs for allocation_size {size}")
        if not set(must) <= set(chosen):
            problems.append(f"must-include {must} missing")
        if not set(chosen) <= set(ids):
            problems.append(f"IDs not offered: {sorted(set(chosen) - set(ids))}")
        if problems:
            raise ClauseFailed(f"preferred {chosen}: " + "; ".join(problems))
        return f"preferred {chosen} for must-include {must}, size {size}"

    def prestart(self, ev: Evidence) -> str:
        if not self._options().pre_start_required:
            raise NotApplicable("pre_start_required is false")
        ids = self._usable_ids()[:1]
        request = pb.PreStartContainerRequest(devices_ids=ids)
        ev.add(f"-> PreStartContainer {show(request)}")
        try:
            response = self._stub().PreStartContainer(request, timeout=limits.DP_PRESTART_TIMEOUT)
        except grpc.RpcError as err:
            self.crash.after_broken_call(err)
            raise ClauseFailed(f"PreStartContainer {ids} failed: {rpc_error(err)}") from err
        ev.add(f"<- {show(response)}")
        return f"PreStartContainer {ids} succeeded"

    def concurrent(self, ev: Evidence) -> str:
        ids = self._usable_ids()
        if not ids:
            raise NotApplicable("the plugin advertises no devices")
        stub = self._stub()
        # Each call may wait for all the others, each as long as twice the plugin's slowest Allocate so far: a plugin
        # that answers one call at a time is not failed for that, only one that never answers (a deadlock between its
        # handlers, or with its ListAndWatch stream).
        timeout = max(limits.DP_RPC_TIMEOUT, 2 * self._allocate_seconds) * limits.CONCURRENT_CALLS
        calls: list[tuple[str, Callable[[], object]]] = []
        for n in range(limits.CONCURRENT_CALLS):
            if n % 2:
                calls.append(
                    ("GetDevicePluginOptions", lambda: stub.GetDevicePluginOptions(pb.Empty(), timeout=timeout))
                )
            else:
                request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids[:1])])
                calls.append((f"Allocate {ids[:1]}", lambda r=request: stub.Allocate(r, timeout=timeout)))
        with futures.ThreadPoolExecutor(len(calls)) as pool:
            running = [(name, pool.submit(call)) for name, call in calls]
            failures = []
            for name, future in running:
                try:
                    future.result()
                    ev.add(f"{name}: answered")
                except grpc.RpcError as err:
                    ev.add(f"{name}: {rpc_error(err)}")
                    failures.append(f"{name}: {rpc_error(err)}")
                    self.crash.after_broken_call(err)
        stream = self._endpoint().stream_state
        ev.add(f"ListAndWatch stream meanwhile: {stream}")
        if failures:
            raise ClauseFailed(f"{len(failures)} of {len(calls)} concurrent calls failed: {failures[:3]}")
        if stream != "open":
            raise ClauseFailed(f"the ListAndWatch stream is {stream} after the concurrent calls")
        return f"{len(calls)} concurrent calls answered while ListAndWatch stayed open"

    def allocate_unknown(self, ev: Evidence) -> str:
        unknown = f"dc-certify-unknown-{uuid.uuid4().hex[:8]}"
        request = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=[unknown])])
        ev.add(f"-> Allocate {show(request)}")
        answered = True
        try:
            ev.add(f"<- {show(self._stub().Allocate(request, timeout=limits.DP_ALLOCATE_TIMEOUT))}")
            ev.add("note: an error for an ID never advertised is what the kubelet's callers expect")
        except grpc.RpcError as err:
            ev.add(f"<- error {rpc_error(err)}")
            answered = err.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        problem = "" if answered else "no answer (connection lost or deadline exceeded)"
        if not problem:
            problem = self._still_serving(ev)
        if not problem:
            return "answered and still serving"
        if self.proc:  # a crash it caused is reported, and the subject restarted, by CrashWatch
            self.proc.exited_within(limits.EXIT_AFTER_BROKEN_CALL)
        raise ClauseFailed(f"Allocate for unknown ID {unknown!r}: {problem}")

    def _still_serving(self, ev: Evidence) -> str:
        if self.proc and not self.proc.running():
            return f"the plugin process is gone ({self.proc.exit_status()})"
        channel = grpc.insecure_channel(f"unix://{os.path.join(self.t.socket_dir, self.registration.endpoint)}")
        try:
            pb_grpc.DevicePluginStub(channel).GetDevicePluginOptions(
                pb.Empty(), timeout=limits.DP_RPC_TIMEOUT, wait_for_ready=False
            )
            ev.add("afterwards: GetDevicePluginOptions on a new connection answered")
            return ""
        except grpc.RpcError as err:
            ev.add(f"afterwards: GetDevicePluginOptions on a new connection: {rpc_error(err)}")
            return f"not serving afterwards ({rpc_error(err)})"
        finally:
            channel.close()

    # -- kubelet restart ----------------------------------------------------------------------------------

    def reregister(self, ev: Evidence) -> str:
        count = len(self._registrations())
        ev.add(f"{count} Register call(s) so far; the kubelet stub restarts: sockets removed, kubelet.sock re-created")
        self._forget_connection()
        restarted = time.monotonic()
        self.stub.restart()
        try:
            reg = self._wait_registration(count + 1, self.t.reregister_timeout)
        except Abort as exc:
            raise ClauseFailed(str(exc)) from exc
        except WaitTimeout as exc:
            raise ClauseFailed(
                f"no Register within {self.t.reregister_timeout:.0f}s after kubelet.sock was re-created"
            ) from exc
        self._show_registration(ev, reg)
        # A rejection for the Register fields is those clauses' verdict (DP-REG-*); one for an endpoint the
        # kubelet cannot dial or ask for options means the plugin did not come back.
        if reg.error and reg.error.startswith(("failed to dial", "failed to get device plugin options")):
            raise ClauseFailed(f"registered again, but the kubelet could not reach the plugin: {reg.error}")
        return f"registered again {reg.at - restarted:.1f}s after kubelet.sock was re-created"


# The kubelet's device plugin directory on a node (staging/src/k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/
# constants.go DevicePluginPath), where it dials every endpoint.
KUBELET_DIR = "/var/lib/kubelet/device-plugins"


def too_long(path: str, what: str) -> str:
    return (
        f"{what} {path} is {len(os.fsencode(path))} bytes, over sun_path's {SUN_PATH_MAX} (unix(7)): a plugin "
        "cannot bind it (bind: invalid argument) and the kubelet cannot dial it (client.go dial)"
    )


def check_socket_paths(socket_dir: str, endpoint: str = "") -> None:
    """BadInput before anything starts when a socket path the run needs exceeds sun_path (107 bytes on Linux,
    unix(7)): kubelet.sock, which the tool serves, and the plugin's endpoint when the user named it."""
    for name, what in (("kubelet.sock", "the kubelet socket"), (endpoint, "the plugin's endpoint")):
        path = os.path.join(socket_dir, name)
        if name and not fits(path):
            raise BadInput(
                too_long(path, what),
                f"certify in a shorter --socket-dir (at most {SUN_PATH_MAX - len(name) - 1} bytes for {name!r})",
            )


def settle(endpoint: PluginEndpoint, what: str = "ListAndWatch") -> list[pb.Device]:
    """The stream's settled list, or ClauseFailed when it sends nothing within FIRST_LIST_TIMEOUT."""
    try:
        return endpoint.settled_list(limits.FIRST_LIST_TIMEOUT, EMPTY_LIST_SETTLE)
    except WaitTimeout as exc:
        raise ClauseFailed(f"{what}: no response within {limits.FIRST_LIST_TIMEOUT:.0f}s ({exc.last_seen})") from exc


def show_responses(ev: Evidence, endpoint: PluginEndpoint, label: str) -> None:
    for n, (devices, at) in enumerate(zip(list(endpoint.updates), list(endpoint.update_times), strict=False), 1):
        response = show(pb.ListAndWatchResponse(devices=devices))
        ev.add(f"<- ListAndWatch{label} #{n} (+{at - endpoint.opened:.2f}s) {response}")


def refuse_live_kubelet(kubelet_socket: str) -> None:
    """Serving kubelet.sock removes every socket in the directory, as a starting kubelet does: never while a
    real kubelet answers there (on a node, its device manager and every plugin would lose their sockets)."""
    if not os.path.exists(kubelet_socket):
        return
    with grpc.insecure_channel(f"unix://{kubelet_socket}") as channel:
        try:
            grpc.channel_ready_future(channel).result(timeout=1)
        except grpc.FutureTimeoutError:
            return  # a stale socket: nobody serves it
    raise BadInput(
        f"a kubelet answers on {kubelet_socket}; certifying here would remove its sockets and every plugin's",
        "stop the kubelet first, or certify in another --socket-dir (a plugin that takes a socket directory "
        "option, or a private mount namespace as `certify sample-device-plugin` uses)",
    )


def certify_device_plugin(target: DevicePluginTarget) -> Certification:
    return DevicePluginCertifier(target).run()
