"""`certify dra-driver`: the tool watches the plugins_registry directory and talks the pluginregistration
and DRA gRPC APIs like the kubelet, checking a DRA driver clause by clause (clauses.DRA_DRIVER_CLAUSES).

Claims: a driver prepares claims allocated to it, which it normally reads from the API server. The user
names claims the driver can prepare (--claims FILE; on a cluster, allocated ResourceClaims of this node;
our fake driver takes them from its state file); with --kubeconfig they are checked against the API server
before anything starts (dra_claims.check_claims). Claims the driver cannot know (for the failing claim and
the unknown unprepare) are made up here with fresh UIDs. Without claims the prepare clauses are NOT
APPLICABLE, never passed.

Like the kubelet, the tool sends NotifyRegistrationStatus(plugin_registered=True) after every (re)start once
the registration socket answers GetInfo, and waits for the endpoint to serve after it: some drivers serve (and
publish slices) only once their registration is confirmed.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import grpc

from device_conformance.certify import cdi, dra_claims, dra_health, limits, resourceslices
from device_conformance.certify.clauses import DRA_DRIVER_CLAUSES, REG_GENERATOR
from device_conformance.certify.crash import CrashWatch
from device_conformance.certify.dra_auto_claims_api import KubeApi
from device_conformance.certify.exchange import rpc_error, show
from device_conformance.certify.subject import SubjectProcess
from device_conformance.certify.verdicts import (
    Certification,
    ClauseFailed,
    Evidence,
    NotApplicable,
    Subject,
)
from device_conformance.core.errors import WaitTimeout
from device_conformance.fakes.dra_driver.health import APIS as HEALTH_APIS
from device_conformance.fakes.dra_driver.kubelet_client import Claim, KubeletClient
from device_conformance.protos.pluginregistration.v1 import api_pb2 as reg_pb2
from device_conformance.protos.pluginregistration.v1 import api_pb2_grpc as reg_grpc
from device_conformance.wait.core import Abort, Pending, until

PLUGIN_TYPE = "DRAPlugin"
# The DRA services the kubelet speaks, preferred first (pkg/kubelet/cm/dra/plugin/dra_plugin.go).
KUBELET_SERVICES = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
REGISTRATION_API = "pluginregistration/v1 (Registration: GetInfo, NotifyRegistrationStatus)"
# How long a driver's slices may be missing or in flux: the kubelet wipes a driver's ResourceSlices only once it
# has been gone this long, "long enough for a simple container restart" (pkg/kubelet/cm/dra/manager.go,
# defaultWipingDelay = 30 s).
SLICES_TIMEOUT = 30.0
# After NotifyRegistrationStatus, how long the endpoint gets to start serving (process start-up included, as
# for registering: limits.REGISTER_TIMEOUT).
SERVE_TIMEOUT = limits.REGISTER_TIMEOUT
# A whole-call error is an answer; a hang past the kubelet's deadline or a lost connection is not.
# Steps that only judge what was recorded (files, the API server): a crash while they run is charged to the next
# clause that talks to the subject (certify/crash.py).
RECORD_ONLY = frozenset({"DRA-CDI-VALID", "DRA-CDI-REMOVED", "DRA-SLICES"})
NOT_AN_ANSWER = (grpc.StatusCode.DEADLINE_EXCEEDED, grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)


# -> an object with claims, allocated (as DraDriverTarget's) and a note for the report (dra_auto_claims.MadeClaims).
MakeClaims = Callable[[Callable[[], "str | None"]], Any]

# How the kubelet calls again for a claim a driver failed in an OK answer, until it succeeds (limits.py has why).
KUBELET_CALLS_AGAIN = {
    "NodePrepareResources": "at every sync of the pod, 60-90 s apart (pkg/kubelet/kuberuntime/kuberuntime_manager.go "
    "SyncPod returns without failing the sync; pkg/kubelet/pod_workers.go completeWork requeues at the resync)",
    "NodeUnprepareResources": "at every sync of the terminating pod, 10-15 s apart (pkg/kubelet/kubelet.go "
    "SyncTerminatingPod fails the sync; pkg/kubelet/pod_workers.go completeWork requeues after the back-off)",
}


@dataclass
class RetryClock:
    """How the certifier tells and spends the time between its calls for a failed claim (_call); a test of a driver
    whose answers do not depend on time may give a virtual one."""

    now: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class GaveUp:
    """A claim the driver still failed when the certifier stopped calling again for it (_call)."""

    answers: int  # every one of them failed it
    seconds: float  # from the first call to the last answer
    earlier: bool = False  # given up on in an earlier call without succeeding since, so not waited for again


@dataclass
class DraDriverTarget:
    registry_dir: str
    driver: str
    command: str | None = None
    claims: list[Claim] = field(default_factory=list)
    # Claim UID -> the device names its allocation has (optional, from --claims): prepare must answer those.
    allocated: dict[str, list[str]] = field(default_factory=dict)
    cdi_dir: str = "/var/run/cdi"
    kubeconfig: str | None = None
    node_name: str | None = None
    slices_timeout: float = SLICES_TIMEOUT
    # --claims auto (certify/dra_auto_claims.py): makes the claims once the driver serves (it may publish its
    # slices only then), given a probe naming why the subject is gone (None while it runs).
    make_claims: MakeClaims | None = None
    name: str = ""
    version: str = ""
    workdir: Path = Path(".")
    retry_clock: RetryClock = field(default_factory=RetryClock)


def load_claims(path: str, driver: str, node: str | None = None) -> tuple[list[Claim], dict[str, list[str]]]:
    """--claims FILE: a JSON or YAML list of {namespace, name, uid[, devices]}, or ResourceClaim objects of
    resource.k8s.io v1, v1beta2 or v1beta1 (checked against `driver` and `node`; dra_claims.load_file); `devices`,
    the device names the claim's allocation has for this driver, lets DRA-PREPARE check that all are prepared."""
    return dra_claims.load_file(path, driver, node)


def _devices(result: Any) -> list[dict[str, Any]]:
    """A claim's prepared devices in a comparable form."""
    from google.protobuf.json_format import MessageToDict

    return [MessageToDict(d, preserving_proto_field_name=True) for d in result.devices]


@dataclass
class SliceJudgement:
    """DRA-SLICES at one moment (before or after the restart): what is wrong, or why nothing could be judged."""

    when: str
    problems: list[str] = field(default_factory=list)
    not_judged: str = ""
    notes: list[str] = field(default_factory=list)  # slices that may serve the node but were not judged


class DraDriverCertifier:
    def __init__(self, target: DraDriverTarget, slice_api: resourceslices.SliceApi | None = None) -> None:
        """`slice_api`: how ResourceSlices and the Node are read (default: KubeApi of target.kubeconfig)."""
        self.t = target
        self.slice_reader = (
            resourceslices.NodeSliceReader(
                lambda: slice_api or KubeApi(str(target.kubeconfig)), target.driver, target.node_name
            )
            if target.kubeconfig
            else None
        )
        self.proc = SubjectProcess(target.command, target.workdir / "subject.log") if target.command else None
        self.registration_socket = ""
        self.info: reg_pb2.PluginInfo | None = None
        self.service = ""
        self.client: KubeletClient | None = None
        self.prepared: dict[str, list[dict[str, Any]]] = {}  # claim UID -> devices from the first prepare
        self._gone = False
        self.unprepared: dict[str, list[dict[str, Any]]] = {}
        self._cdi_before = {p.name for p in cdi.spec_files(Path(target.cdi_dir))}
        # CDI IDs defined just before the first prepare (static and driver-wide specs written at start-up), and
        # every CDI ID each claim was answered with: what makes an ID claim-specific (cdi_removed).
        self._cdi_at_first_prepare: set[str] | None = None
        self.answered_ids: dict[str, set[str]] = {}
        # (method, claim UID) -> the errors of the OK answers that failed it before the answer judged (_call)
        self.failed_answers: dict[tuple[str, str], list[str]] = {}
        # (method, claim UID) -> the claim was still failed when the certifier gave up calling again (_call)
        self.gave_up: dict[tuple[str, str], GaveUp] = {}
        self._slices_before: SliceJudgement | None = None  # judged in DRA-RESTART, before the restart
        self.crash = CrashWatch(self.proc, self._recover)

    # -- the run ------------------------------------------------------------------------------------------

    def run(self) -> Certification:
        subject = Subject("dra-driver", self.t.name or self.t.driver, self.t.version, self.t.command or "")
        cert = Certification(subject, [REGISTRATION_API])
        steps: dict[str, Callable[[Evidence], str | None]] = {
            "DRA-REG-SOCKET": self.reg_socket,
            "DRA-REG-INFO": self.reg_info,
            "DRA-REG-NOTIFY": self.reg_notify,
            "DRA-SERVICE": self.dra_service,
            "DRA-HEALTH": self.health,
            "DRA-PREPARE": self.prepare,
            "DRA-CDI-VALID": self.cdi_valid,
            "DRA-PREPARE-IDEMPOTENT": self.prepare_again,
            "DRA-PREPARE-MULTI": self.prepare_multi,
            "DRA-UNPREPARE": self.unprepare,
            "DRA-CDI-REMOVED": self.cdi_removed,
            "DRA-UNPREPARE-IDEMPOTENT": self.unprepare_again,
            "DRA-UNPREPARE-UNKNOWN": self.unprepare_unknown,
            "DRA-RESTART": self.restart,
            "DRA-SLICES": self.slices,
        }
        clauses = {c.id: c for c in DRA_DRIVER_CLAUSES}
        assert set(clauses) == set(steps), "every clause has exactly one step"
        try:
            if self.proc:
                self.proc.start()
            for clause_id, step in steps.items():
                if clause_id == "DRA-PREPARE":
                    self._make_claims(cert)
                uses_subject = clause_id not in RECORD_ONLY
                cert.results.append(self.crash.run(clauses[clause_id], step, uses_subject=uses_subject))
        finally:
            self._cleanup(cert)
            cert.finished = cert.started + sum(r.seconds for r in cert.results)
        if self.service:
            cert.api_versions.append(f"dra/{self.service.split('.')[0]} ({self.service})")
        if self.slice_reader and self.slice_reader.version:
            cert.api_versions.append(f"resource.k8s.io/{self.slice_reader.version} (ResourceSlice)")
        return cert

    def _make_claims(self, cert: Certification) -> None:
        """--claims auto: claims made now that the driver serves; a BadInput from there ends the run."""
        if self.t.make_claims is None or self.client is None:
            return
        made = self.t.make_claims(self._subject_gone)
        self.t.claims, self.t.allocated = list(made.claims), dict(made.allocated)
        cert.notes.append(made.note)

    def _subject_gone(self) -> str | None:
        if self.proc and not self.proc.running():
            return f"the subject exited ({self.proc.exit_status()})"
        return None

    def _cleanup(self, cert: Certification) -> None:
        """Unprepare whatever is still prepared, so a real node is left as found."""
        if self.client and self.prepared and not self._gone:
            try:
                self.client.unprepare(self._claims(list(self.prepared)), version=self.service, timeout=10)
            except grpc.RpcError as err:
                cert.notes.append(f"cleanup unprepare failed: {rpc_error(err)}")
        if self.client:
            self.client.close()
        if self.slice_reader:
            self.slice_reader.close()
        if self.proc:
            cert.notes.append(f"subject process: started {self.proc.starts} time(s), {self.proc.stop()}")
            cert.notes.append(f"subject log: {self.proc.log_path}")

    def _recover(self, ev: Evidence, restart: Callable[[], str]) -> None:
        """CrashWatch's callback: start the subject again, find, notify and connect it as the kubelet would."""
        self._restart_and_reconnect(ev, restart)
        ev.add("certifier: the restarted subject registered again, was notified and serves")

    def _restart_and_reconnect(self, ev: Evidence, restart: Callable[[], str]) -> None:
        """Drop the connection, restart the subject (`restart`), then find, notify and connect it again."""
        self._gone = True
        if self.client:
            self.client.close()
            self.client = None
        restart()
        self._reregister(ev)
        self._gone = False

    def _claims(self, uids: list[str]) -> list[Claim]:
        known = {c[1]: c for c in self.t.claims}
        return [known[u] for u in uids if u in known]

    # -- registration -------------------------------------------------------------------------------------

    def _find_socket(self, ev: Evidence) -> tuple[str, reg_pb2.PluginInfo]:
        """Like the kubelet's plugin watcher: every socket in the directory gets GetInfo; ours is the one
        naming our driver (or the only one answering)."""
        self.crash.check_up()  # a subject that crashed at start-up never registers: nothing to wait for
        seen: dict[str, str] = {}

        def probe() -> tuple[str, reg_pb2.PluginInfo] | Pending:
            answering: list[tuple[str, reg_pb2.PluginInfo]] = []
            entries = os.scandir(self.t.registry_dir) if os.path.isdir(self.t.registry_dir) else []
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.name.startswith(".") or not stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                    continue
                try:
                    info = self._get_info(entry.path)
                except grpc.RpcError as err:
                    seen[entry.name] = rpc_error(err)
                    continue
                seen[entry.name] = f"{info.type} {info.name}"
                if info.name == self.t.driver:
                    return entry.path, info
                answering.append((entry.path, info))
            if len(answering) == 1 and self.proc:
                return answering[0]
            if self.proc and not self.proc.running():
                raise Abort(f"the subject exited ({self.proc.exit_status()}); sockets {seen}")
            return Pending(f"sockets {seen}")

        try:
            return until(probe, what=f"a registration socket in {self.t.registry_dir}", timeout=limits.REGISTER_TIMEOUT)
        except (WaitTimeout, Abort) as exc:
            ev.add(str(exc))
            if self.proc:
                ev.extend(f"  log: {line}" for line in self.proc.log_tail(10))
            why = str(exc).split(";")[0] if isinstance(exc, Abort) else f"within {limits.REGISTER_TIMEOUT:.0f}s"
            raise ClauseFailed(f"no registration socket for {self.t.driver} ({why})") from exc

    def _get_info(self, path: str) -> reg_pb2.PluginInfo:
        with grpc.insecure_channel(f"unix:{path}", options=[("grpc.use_local_subchannel_pool", 1)]) as channel:
            stub = reg_grpc.RegistrationStub(channel)
            return stub.GetInfo(reg_pb2.InfoRequest(), timeout=limits.GET_INFO_TIMEOUT, wait_for_ready=True)

    def _registered(self) -> None:
        if not self.registration_socket:
            raise ClauseFailed("not checked: no registration socket (DRA-REG-SOCKET)")

    def _connected(self) -> KubeletClient:
        self._registered()
        if self.proc and not self.proc.running():  # fail fast; CrashWatch reports the crash
            raise ClauseFailed(f"the subject is not running ({self.proc.exit_status()})")
        if self.client is None:
            raise ClauseFailed("not checked: no usable DRA service endpoint (DRA-REG-INFO, DRA-SERVICE)")
        return self.client

    def reg_socket(self, ev: Evidence) -> str:
        self.registration_socket, self.info = self._find_socket(ev)
        ev.add(f"{self.registration_socket}: GetInfo answered")
        return f"{self.registration_socket} serves pluginregistration.Registration"

    def reg_info(self, ev: Evidence) -> str:
        self._registered()
        started = time.monotonic()
        try:
            info = self._get_info(self.registration_socket)
        except grpc.RpcError as err:
            raise ClauseFailed(f"GetInfo failed: {rpc_error(err)}") from err
        took = time.monotonic() - started
        ev.add(f"-> GetInfo {{}}\n<- {show(info)} ({took:.3f}s)")
        self.info = info
        problems = []
        if info.type != PLUGIN_TYPE:
            problems.append(f"type {info.type!r}, expected {PLUGIN_TYPE!r}")
        if info.name != self.t.driver:
            problems.append(f"name {info.name!r}, expected {self.t.driver!r}")
        if info.endpoint and not info.endpoint.startswith("/"):
            problems.append(f"endpoint {info.endpoint!r} is not an absolute path")
        spoken = [v for v in KUBELET_SERVICES if v in info.supported_versions]
        if not spoken:
            problems.append(f"supported_versions {list(info.supported_versions)} has none of {list(KUBELET_SERVICES)}")
        if problems:
            raise ClauseFailed("; ".join(problems))
        self.service = spoken[0]
        if not info.endpoint:
            ev.add(
                f"endpoint empty: the kubelet uses the registration socket {self.registration_socket} ({REG_GENERATOR})"
            )
        elif not os.path.exists(info.endpoint):  # checked after NotifyRegistrationStatus (DRA-SERVICE)
            ev.add(f"endpoint {info.endpoint} does not exist yet (a driver may serve only once notified)")
        return f"{info.type} {info.name} at {self._endpoint()}, speaks {spoken}"

    def _endpoint(self) -> str:
        """Where the DRA service is: GetInfo's endpoint, or the registration socket itself when that is empty
        (pluginregistration/v1 api.proto: "Optional endpoint location"; the kubelet then uses the socket it found,
        pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go GenerateRegisterPluginFunc)."""
        return (self.info.endpoint if self.info else "") or self.registration_socket

    def reg_notify(self, ev: Evidence) -> str:
        self._registered()
        self._notify(ev)
        return "answered"

    def _notify(self, ev: Evidence) -> None:
        """NotifyRegistrationStatus(plugin_registered=True), as the kubelet sends to every registration socket it
        validated (pkg/kubelet/pluginmanager/operationexecutor/operation_generator.go, GenerateRegisterPluginFunc
        -> notifyPlugin)."""
        status = reg_pb2.RegistrationStatus(plugin_registered=True)
        ev.add(f"-> NotifyRegistrationStatus {show(status)}")
        with grpc.insecure_channel(f"unix:{self.registration_socket}") as channel:
            try:
                answer = reg_grpc.RegistrationStub(channel).NotifyRegistrationStatus(
                    status, timeout=limits.NOTIFY_TIMEOUT
                )
            except grpc.RpcError as err:
                raise ClauseFailed(f"NotifyRegistrationStatus failed: {rpc_error(err)}") from err
        ev.add(f"<- {show(answer)}")

    def _wait_endpoint(self, ev: Evidence) -> str:
        endpoint = self._endpoint()

        def probe() -> str | Pending:
            if self.proc and not self.proc.running():
                raise Abort(f"the subject exited ({self.proc.exit_status()})")
            return endpoint if os.path.exists(endpoint) else Pending(f"{endpoint} does not exist")

        try:
            return until(probe, what=f"the endpoint {endpoint}", timeout=SERVE_TIMEOUT)
        except (WaitTimeout, Abort) as exc:
            ev.add(str(exc))
            raise ClauseFailed(
                f"endpoint {endpoint} not there {SERVE_TIMEOUT:.0f}s after NotifyRegistrationStatus "
                "(or in another mount namespace)"
            ) from exc

    def _connect_service(self, ev: Evidence) -> tuple[KubeletClient, Any]:
        """The endpoint once it serves: an empty NodePrepareResources that waits for the socket to accept."""
        endpoint = self._wait_endpoint(ev)
        client = KubeletClient(self.registration_socket, endpoint)
        ev.add(f"-> {self.service}/NodePrepareResources {{}} on {endpoint}")
        try:
            response = client.prepare([], version=self.service, timeout=SERVE_TIMEOUT, wait_for_ready=True)
        except grpc.RpcError as err:
            client.close()
            raise ClauseFailed(f"{self.service} not served on the endpoint: {rpc_error(err)}") from err
        ev.add(f"<- {show(response)}")
        return client, response

    def _reregister(self, ev: Evidence) -> None:
        """After a (re)start: find the socket (GetInfo), notify it, wait for the endpoint, as the kubelet does."""
        self.registration_socket, self.info = self._find_socket(ev)
        self._notify(ev)
        self.client, _ = self._connect_service(ev)

    def dra_service(self, ev: Evidence) -> str:
        self._registered()
        if not self.service or self.info is None:
            raise ClauseFailed("not checked: no usable DRA service endpoint (DRA-REG-INFO)")
        self.client, response = self._connect_service(ev)
        if response.claims:
            raise ClauseFailed(f"an empty request was answered with claims {sorted(response.claims)}")
        return f"{self.service} answers on {self._endpoint()}"

    # -- health -------------------------------------------------------------------------------------------

    def health(self, ev: Evidence) -> str:
        """DRA-HEALTH: every DRAResourceHealth version advertised sends reports or declines (dra_health.py); a
        report's devices are named, and those in none of the driver's slices for the node are notes (the slices may
        not be published yet)."""
        client = self._connected()
        assert self.info is not None  # DRA-REG-INFO, or _connected had failed
        advertised = [api for api in HEALTH_APIS if f"{api}.DRAResourceHealth" in self.info.supported_versions]
        if not advertised:
            raise NotApplicable("advertises no DRAResourceHealth version (the service is optional)")
        clock = self.t.retry_clock
        # One version after the other, as a kubelet of each release would open it: at most the window each.
        watches = [
            dra_health.watch_first_report(
                lambda api=api: client.watch_health(api=api),
                api,
                now=clock.now,
                sleep=clock.sleep,
                window=limits.DRA_HEALTH_FIRST_REPORT,
                pause=limits.KUBELET_HEALTH_RETRY,
            )
            for api in advertised
        ]
        failed, found = [], []
        for watch in watches:
            calls = f"{watch.calls} call(s), {watch.seconds:.1f}s"
            ev.add(f"-> {watch.api}.DRAResourceHealth/NodeWatchResources {{}} ({calls})")
            if watch.outcome == dra_health.REPORT:
                ev.add(f"<- {show(watch.report)}")
                found.append(self._judge_health_report(ev, watch, failed))
            elif watch.outcome == dra_health.SILENT:
                ev.add(f"<- no report within {limits.DRA_HEALTH_FIRST_REPORT:.0f} s, the stream open")
                found.append(f"{watch.api}: open, no report within {limits.DRA_HEALTH_FIRST_REPORT:.0f} s")
            elif watch.outcome == dra_health.DECLINED:
                ev.add(f"<- error {watch.errors[-1]}")
                found.append(f"{watch.api}: declined ({watch.errors[-1]})")
            else:
                ev.add(f"<- errors {list(dict.fromkeys(watch.errors))}")
                failed.append(
                    f"{watch.api}.DRAResourceHealth is advertised, but NodeWatchResources failed in all {watch.calls} "
                    f"call(s) over {watch.seconds:.0f} s (last: {watch.errors[-1]}): the kubelet calls again every "
                    f"{limits.KUBELET_HEALTH_RETRY:.0f} s and gets no health"
                )
        reported = {(d.device.pool_name, d.device.device_name) for w in watches if w.report for d in w.report.devices}
        published = self._published_devices(ev) if reported else None
        for pool, device in sorted(reported - published) if published is not None else ():
            ev.add(f"note: {pool}/{device} not judged (in none of the driver's ResourceSlices for the node now)")
        if failed:
            raise ClauseFailed("; ".join(failed))
        if all(w.outcome == dra_health.DECLINED for w in watches):
            raise NotApplicable(f"declines health reporting: {'; '.join(found)}")
        return "; ".join(found)

    def _judge_health_report(self, ev: Evidence, watch: dra_health.HealthWatch, failed: list[str]) -> str:
        """What the first report says; a device it does not name goes to `failed`."""
        report = watch.report
        unnamed = dra_health.unnamed(report)
        if unnamed:
            failed.append(
                f"{watch.api}: the first report names no device in {', '.join(unnamed)}: a DeviceIdentifier names "
                "the pool that contains the device and its unique name in the pool (dra-health api.proto)"
            )
        named = sorted({f"{d.device.pool_name}/{d.device.device_name}" for d in report.devices})
        return f"{watch.api}: reports {len(report.devices)} device(s) {named}"

    def _published_devices(self, ev: Evidence) -> set[tuple[str, str]] | None:
        """(pool, device) of the driver's slices serving the node now; None when they cannot be read (a note)."""
        if self.slice_reader is None:
            ev.add("note: the reported devices are not matched with ResourceSlices (no API server in sanity mode)")
            return None
        reading = self.slice_reader.read()
        if reading.not_judged or not reading.judged:
            why = reading.not_judged or "; ".join(reading.problems)
            ev.add(f"note: the reported devices are not matched with ResourceSlices ({why})")
            return None
        return {(s["spec"]["pool"]["name"], d["name"]) for s in reading.judged for d in s["spec"].get("devices") or []}

    # -- claims -------------------------------------------------------------------------------------------

    def _claim(self, n: int) -> Claim:
        if len(self.t.claims) <= n:
            raise NotApplicable(f"needs {n + 1} claim(s) the driver can prepare (--claims), got {len(self.t.claims)}")
        return self.t.claims[n]

    @staticmethod
    def _made_up(what: str) -> Claim:
        tag = uuid.uuid4().hex[:8]
        return ("dc-certify", f"00000000-dc00-4000-8000-{uuid.uuid4().hex[:12]}", f"{what}-{tag}")

    def _call(self, ev: Evidence, method: str, claims: list[Claim], *, again: bool = True) -> Any:
        """The driver's answer to `method` for `claims`. A claim failed in an OK answer (dra/v1 api.proto
        NodePrepareResourceResponse.error: "If non-empty, preparing the ResourceClaim failed") is called again, as
        the kubelet calls again for it until it succeeds (KUBELET_CALLS_AGAIN), 2 s later and then ever further
        apart, until it succeeds or limits.DRA_FAILED_CLAIM_RETRY_FOR has passed (the kubelet's first two resyncs);
        the answer returned holds each claim's last result. again=False: the claim's error is the answer judged (a
        made-up claim)."""
        clock = self.t.retry_clock
        started = clock.now()
        response = self._call_once(ev, method, claims)
        if not again:
            return response
        answers, pause = 1, limits.DRA_FAILED_CLAIM_FIRST_PAUSE
        while failed := self._failed(response, claims):
            waited = clock.now() - started
            if waited >= limits.DRA_FAILED_CLAIM_RETRY_FOR or all((method, c[1]) in self.gave_up for c in failed):
                self._give_up(ev, method, failed, GaveUp(answers, waited))
                break
            for claim in failed:
                self.failed_answers.setdefault((method, claim[1]), []).append(response.claims[claim[1]].error)
            pause = min(pause, limits.DRA_FAILED_CLAIM_RETRY_FOR - waited)
            ev.add(
                f"note: {method} failed claim(s) {[c[1] for c in failed]} in an OK answer; the kubelet calls again "
                f"for them, and so does the certifier (retry {answers} in {pause:.0f} s, {waited + pause:.0f} s after "
                f"the first call; the kubelet's is its next pod sync, 60-90 s; the certifier gives up at "
                f"{limits.DRA_FAILED_CLAIM_RETRY_FOR:.0f} s)"
            )
            clock.sleep(pause)  # a retry's spacing, not a wait for an event
            retried = self._call_once(ev, method, failed)
            answers += 1
            for claim in failed:
                if claim[1] in retried.claims:
                    response.claims[claim[1]].CopyFrom(retried.claims[claim[1]])
            pause = min(2 * pause, limits.DRA_FAILED_CLAIM_MAX_PAUSE)
        for claim in claims:
            if claim[1] in response.claims and not response.claims[claim[1]].error:
                self.gave_up.pop((method, claim[1]), None)
        return response

    @staticmethod
    def _failed(response: Any, claims: list[Claim]) -> list[Claim]:
        return [c for c in claims if c[1] in response.claims and response.claims[c[1]].error]

    def _give_up(self, ev: Evidence, method: str, failed: list[Claim], now: GaveUp) -> None:
        """Stop calling again for `failed`; a claim given up on before without succeeding since is not waited for
        a second time (its record stays, marked earlier)."""
        for claim in failed:
            before = self.gave_up.get((method, claim[1]))
            self.gave_up[(method, claim[1])] = replace(before, earlier=True) if before else now
        earlier = (
            " (given up on before, not waited for again)"
            if all(self.gave_up[(method, c[1])].earlier for c in failed)
            else ""
        )
        ev.add(
            f"certifier: {method} still failed claim(s) {[c[1] for c in failed]} after {now.answers} answer(s) over "
            f"{now.seconds:.0f} s{earlier}: given up, the last error is the verdict's"
        )

    def _retried(self, method: str, uid: str) -> str:
        """What the verdict adds for a claim the driver failed in OK answers before it succeeded ("" if none)."""
        errors = self.failed_answers.get((method, uid), [])
        if not errors:
            return ""
        distinct = list(dict.fromkeys(errors))
        return f" (after {len(errors)} failed answer(s) {distinct}, which the kubelet calls again for)"

    def _never_succeeded(self, method: str, uid: str) -> str:
        """What a FAIL adds for a claim the certifier gave up on ("" if it did not): how many answers over how long
        failed it, and the rule with its upstream source."""
        gave_up = self.gave_up.get((method, uid))
        if gave_up is None:
            return ""
        when = " when first called (not waited for again)" if gave_up.earlier else ""
        return (
            f" in all {gave_up.answers} answer(s) over {gave_up.seconds:.0f} s{when}; a claim failed in an OK answer "
            f"must succeed when called again within {limits.DRA_FAILED_CLAIM_RETRY_FOR:.0f} s, the kubelet's first "
            f"two resyncs after the failure: it calls again {KUBELET_CALLS_AGAIN[method]} until it succeeds"
        )

    def _call_once(self, ev: Evidence, method: str, claims: list[Claim]) -> Any:
        client = self._connected()
        ev.add(
            f"-> {self.service}/{method} "
            + json.dumps([{"namespace": c[0], "uid": c[1], "name": c[2]} for c in claims])
        )
        call = client.prepare if method == "NodePrepareResources" else client.unprepare
        try:
            response = call(claims, version=self.service, timeout=limits.DRA_CALL_TIMEOUT)
        except grpc.RpcError as err:
            ev.add(f"<- error {rpc_error(err)}")
            self.crash.after_broken_call(err)
            raise ClauseFailed(f"{method} failed as a whole: {rpc_error(err)}") from err
        ev.add(f"<- {show(response)}")
        return response

    def _prepared_ok(self, response: Any, claim: Claim) -> list[dict[str, Any]]:
        uid = claim[1]
        if uid not in response.claims:
            raise ClauseFailed(f"claim {uid} missing from the answer (has {sorted(response.claims)})")
        result = response.claims[uid]
        if result.error:
            raise ClauseFailed(
                f"claim {uid}: error {result.error!r}" + self._never_succeeded("NodePrepareResources", uid)
            )
        return self._checked_devices(uid, result)

    def _checked_devices(self, uid: str, result: Any) -> list[dict[str, Any]]:
        """A prepared claim's devices, each with pool and device name and qualified CDI IDs; zero devices are
        allowed ("each request may have zero or more devices", dra/v1 api.proto NodePrepareResourceResponse)."""
        for device in result.devices:
            if not device.pool_name or not device.device_name:
                raise ClauseFailed(f"claim {uid}: device without pool or device name: {show(device)}")
            bad = [i for i in device.cdi_device_ids if cdi.parse_qualified(i) is None]
            if bad:
                raise ClauseFailed(f"claim {uid}: CDI device IDs {bad} are not vendor/class=name")
        self.answered_ids.setdefault(uid, set()).update(i for d in result.devices for i in d.cdi_device_ids)
        return _devices(result)

    def prepare(self, ev: Evidence) -> str:
        claim = self._claim(0)
        first = self._cdi_at_first_prepare is None
        if first:
            self._cdi_at_first_prepare = cdi.defined_ids(Path(self.t.cdi_dir))
        devices = self._prepared_ok(self._call(ev, "NodePrepareResources", [claim]), claim)
        self.prepared[claim[1]] = devices
        if first:
            ev.add(f"CDI IDs defined before the first prepare: {sorted(self._cdi_at_first_prepare or ())}")
        expected = self.t.allocated.get(claim[1])
        if not devices:
            ev.add(
                "note: no devices in the answer; the API allows it (dra/v1 api.proto: 'zero or more devices') and "
                "the kubelet records none (drivers applying devices through NRI answer none)"
            )
            return f"claim {claim[0]}/{claim[2]}: 0 devices (allowed: zero or more)" + self._retried(
                "NodePrepareResources", claim[1]
            )
        if expected is not None:
            got = sorted(d.get("device_name", "") for d in devices)
            ev.add(f"allocated devices (--claims): {sorted(expected)}")
            if got != sorted(expected):
                raise ClauseFailed(f"prepared devices {got}, the allocation has {sorted(expected)}")
        return f"claim {claim[0]}/{claim[2]}: {len(devices)} device(s)" + self._retried(
            "NodePrepareResources", claim[1]
        )

    def _cdi_ids(self, uids: list[str], answers: dict[str, list[dict[str, Any]]] | None = None) -> list[str]:
        answers = self.prepared if answers is None else answers
        return [i for u in uids for d in answers.get(u, []) for i in d.get("cdi_device_ids", [])]

    def _no_cdi_reason(self, answers: dict[str, list[dict[str, Any]]]) -> str:
        if not any(answers.values()):
            return "the driver answered no devices (the API allows zero or more), so there are no CDI device IDs"
        return "the driver returned no CDI device IDs (the API: 'None is also valid', Device.cdi_device_ids)"

    def cdi_valid(self, ev: Evidence) -> str:
        ids = self._cdi_ids(list(self.prepared))
        if not self.prepared:
            raise NotApplicable("no claim was prepared (DRA-PREPARE)")
        if not ids:
            raise NotApplicable(self._no_cdi_reason(self.prepared))
        cdi_dir = Path(self.t.cdi_dir)
        kinds = {cdi.parse_qualified(i)[0] for i in ids}  # type: ignore[index]
        problems: list[str] = []
        checked = 0
        for spec in map(cdi.check_spec, cdi.spec_files(cdi_dir)):
            if spec.kind not in kinds and spec.path.name in self._cdi_before:
                continue  # another vendor's spec that was there before we started
            checked += 1
            ev.add(f"{spec.path}: kind {spec.kind!r}, devices {spec.devices}, problems {spec.problems or 'none'}")
            problems += [f"{spec.path.name}: {p}" for p in spec.problems]
        for qualified in ids:
            files = cdi.resolve(cdi_dir, qualified)
            ev.add(f"{qualified} -> {[str(f) for f in files]}")
            if len(files) != 1:
                problems.append(f"{qualified} is defined in {len(files)} spec files, expected exactly 1")
        if problems:
            raise ClauseFailed("; ".join(problems[:5]))
        return f"{checked} spec file(s) valid; {len(ids)} CDI device ID(s) each resolve once"

    def prepare_again(self, ev: Evidence) -> str:
        claim = self._claim(0)
        if claim[1] not in self.prepared:
            raise NotApplicable("the first prepare did not succeed (DRA-PREPARE)")
        again = self._prepared_ok(self._call(ev, "NodePrepareResources", [claim]), claim)
        if again != self.prepared[claim[1]]:
            raise ClauseFailed(f"second prepare gave {again}, the first {self.prepared[claim[1]]}")
        return "the same devices and CDI IDs again"

    def prepare_multi(self, ev: Evidence) -> str:
        """Several claims, one made up: a whole-call error is an answer (dra/v1 api.proto: "NodePrepareResources
        will be called again for those that are missing"; kubeletplugin's NodePrepareResources fails the call when
        getResourceClaims cannot read one), and so is a per-claim error. The kubelet fails the pod's prepare on
        either (pkg/kubelet/cm/dra/manager.go, Manager.prepareResources), so neither loses anything."""
        good = self._claim(1) if len(self.t.claims) > 1 else self._claim(0)
        bad = self._made_up("not-allocated")
        ev.add(f"claim {bad[0]}/{bad[2]} (uid {bad[1]}) is made up: the driver cannot prepare it")
        response = self._multi_call(ev, [good, bad])
        if response is None:
            return "the whole call failed with an error (allowed: the kubelet calls again)"
        extra = sorted(set(response.claims) - {good[1], bad[1]})
        if extra:  # manager.go prepareResources: "NodePrepareResources returned result for unknown claim UID"
            raise ClauseFailed(f"the answer has claim UIDs nobody asked for: {extra}")
        if good[1] not in response.claims:
            raise ClauseFailed(f"claim {good[1]} missing from a successful answer (has {sorted(response.claims)})")
        if bad[1] not in response.claims:  # manager.go prepareResources: "NodePrepareResources skipped %d"
            raise ClauseFailed(f"the failing claim {bad[1]} is missing from a successful answer")
        if not response.claims[bad[1]].error:
            raise ClauseFailed(
                f"claim {bad[1]} was never allocated but was answered as prepared with no error: "
                f"{show(response.claims[bad[1]])}"
            )
        if response.claims[good[1]].error:
            ev.add("note: the good claim failed too; the kubelet fails the pod's prepare on any claim's error anyway")
            return f"both claims answered with errors ({bad[2]}: its own)"
        self.prepared.setdefault(good[1], self._checked_devices(good[1], response.claims[good[1]]))
        return f"{good[2]} prepared, {bad[2]} reported its own error"

    def _multi_call(self, ev: Evidence, claims: list[Claim]) -> Any:
        """The answer, or None for a whole-call error that is an answer (not a hang, crash or lost connection)."""
        try:
            return self._call(ev, "NodePrepareResources", claims, again=False)
        except ClauseFailed as exc:
            err = exc.__cause__
            code = err.code() if isinstance(err, grpc.Call) else None
            if code is None or code in NOT_AN_ANSWER:  # a hang, a crash or a lost connection answers nothing
                raise
            ev.add(
                "note: a whole-call error is allowed with several claims (dra/v1 api.proto "
                "NodePrepareResourcesResponse: 'NodePrepareResources will be called again for those that are "
                "missing'); kubeletplugin's NodePrepareResources fails the call when getResourceClaims cannot read one"
            )
            return None

    def unprepare(self, ev: Evidence) -> str:
        if not self.prepared:
            raise NotApplicable("no claim was prepared (DRA-PREPARE)")
        claims = self._claims(list(self.prepared))
        response = self._call(ev, "NodeUnprepareResources", claims)
        problems = [
            f"{c[1]}: {response.claims[c[1]].error or 'missing'}"
            for c in claims
            if c[1] not in response.claims or response.claims[c[1]].error
        ]
        self.unprepared = dict(self.prepared)
        if problems:
            failed = self._failed(response, claims)
            raise ClauseFailed(
                f"unprepare: {problems}"
                + (self._never_succeeded("NodeUnprepareResources", failed[0][1]) if failed else "")
            )
        self.prepared.clear()
        return f"{len(claims)} claim(s) unprepared"

    def _claim_specific(self, uid: str, qualified: str) -> str | None:
        """None when the CDI ID is the claim's own, else why it is shared or static: listed by another claim, or
        defined before the first prepare (written at start-up)."""
        others = sorted(u for u, ids in self.answered_ids.items() if u != uid and qualified in ids)
        if others:
            return f"shared: also listed by claim(s) {others}"
        if self._cdi_at_first_prepare is not None and qualified in self._cdi_at_first_prepare:
            return "static: defined before the first prepare"
        return None

    def cdi_removed(self, ev: Evidence) -> str:
        """Only claim-specific CDI IDs must go: the reference driver removes the claim's own spec on unprepare and
        keeps its driver-wide one (dra-example-driver cmd/dra-example-kubeletplugin/cdi.go: DeleteClaimSpecFile vs
        CreateCommonSpecFile at start-up); neither the CDI spec, KEP-4381 nor the kubelet asks more."""
        done = self.unprepared
        if not done or self.prepared:
            raise NotApplicable("no claim was unprepared (DRA-UNPREPARE)")
        all_ids = list(dict.fromkeys(self._cdi_ids(list(done), done)))
        if not all_ids:
            raise NotApplicable(self._no_cdi_reason(done))
        ids = []
        for uid, devices in done.items():
            for qualified in dict.fromkeys(i for d in devices for i in d.get("cdi_device_ids", [])):
                why = self._claim_specific(uid, qualified)
                if why:
                    ev.add(f"note: {qualified} of claim {uid} not judged ({why}; may stay)")
                elif qualified not in ids:
                    ids.append(qualified)
        if not ids:
            return f"no claim-specific CDI device IDs; {len(all_ids)} shared or static one(s) may stay"
        left = {}
        for qualified in ids:
            files = cdi.resolve(Path(self.t.cdi_dir), qualified)
            ev.add(f"{qualified} -> {[str(f) for f in files] or 'not defined any more'}")
            if files:
                left[qualified] = [str(f) for f in files]
        if left:
            raise ClauseFailed(f"still defined after unprepare: {left}")
        return f"none of {len(ids)} claim-specific CDI device ID(s) resolves any more"

    def unprepare_again(self, ev: Evidence) -> str:
        claim = self._claim(0)
        if claim[1] not in self.unprepared:
            raise NotApplicable("the claim was not unprepared (DRA-UNPREPARE)")
        response = self._call(ev, "NodeUnprepareResources", [claim])
        result = response.claims.get(claim[1])
        if result is None:
            raise ClauseFailed(f"second unprepare of {claim[1]}: claim missing from answer")
        if result.error:
            raise ClauseFailed(
                f"second unprepare of {claim[1]}: {result.error}"
                + self._never_succeeded("NodeUnprepareResources", claim[1])
            )
        return "the second unprepare succeeded"

    def unprepare_unknown(self, ev: Evidence) -> str:
        unknown = self._made_up("never-prepared")
        ev.add(f"claim {unknown[0]}/{unknown[2]} (uid {unknown[1]}) is made up: never prepared")
        response = self._call(ev, "NodeUnprepareResources", [unknown])
        result = response.claims.get(unknown[1])
        if result is None:
            raise ClauseFailed("unprepare of an unknown claim: claim missing from answer")
        if result.error:
            raise ClauseFailed(
                f"unprepare of an unknown claim: {result.error}"
                + self._never_succeeded("NodeUnprepareResources", unknown[1])
            )
        return "succeeded"

    def restart(self, ev: Evidence) -> str:
        if not self.proc:
            raise NotApplicable("the driver was started outside the tool (give --command to check restarts)")
        claim = self._claim(0)
        before = self._prepared_ok(self._call(ev, "NodePrepareResources", [claim]), claim)
        self.prepared[claim[1]] = before
        if self.t.kubeconfig:  # judged in DRA-SLICES, with the slices after the restart
            self._slices_before = self._judge_slices(ev, "before the restart")
        proc = self.proc
        self._restart_and_reconnect(ev, lambda: ev.add(f"certifier: restarting the driver ({proc.restart()})"))
        # The restarted kubelet prepares a pod's claims for one driver in one call (pkg/kubelet/cm/dra/manager.go,
        # Manager.prepareResources: `batches`): with two claims given, the second comes in the same call.
        claims = [claim, self._claim(1)] if len(self.t.claims) > 1 else [claim]
        response = self._call(ev, "NodePrepareResources", claims)
        after = self._prepared_ok(response, claim)
        if after != before:
            raise ClauseFailed(f"after the restart prepare gave {after}, before {before}")
        for other in claims[1:]:
            self.prepared[other[1]] = self._prepared_ok(response, other)
        together = f", {claims[1][2]} prepared in the same call" if len(claims) > 1 else ""
        return f"the same devices and CDI IDs after the restart{together}"

    def slices(self, ev: Evidence) -> str:
        """The driver's slices serving the node (spec.nodeName, allNodes, a nodeSelector of the Node's labels, per
        device: resourceslices.NodeSliceReader), judged before and after the restart. Slices whose node the
        Node's labels decide are not judged when the labels cannot be read: NOT APPLICABLE when no other slice
        serves the node, else a note."""
        if self.slice_reader is None:
            raise NotApplicable("no API server in sanity mode (give --kubeconfig and --node to check ResourceSlices)")
        when = "after the restart" if self._slices_before else "now"
        judged = [j for j in (self._slices_before, self._judge_slices(ev, when)) if j is not None]
        problems = [p for j in judged for p in j.problems]
        if problems:
            raise ClauseFailed("; ".join(problems[:5]))
        unjudged = [f"{j.when}: {j.not_judged}" for j in judged if j.not_judged]
        if unjudged:
            raise NotApplicable("; ".join(unjudged))
        valid = "valid before and after the restart" if len(judged) == 2 else "valid"
        unread = max(len(j.notes) for j in judged)
        if unread:  # the notes are in the evidence
            return f"{valid}; {unread} slice(s) selecting nodes by label not judged (the Node's labels were not read)"
        return valid

    def _judge_slices(self, ev: Evidence, when: str) -> SliceJudgement:
        """Poll the driver's slices until they are there and valid (or nothing can be judged), for as long as the
        kubelet lets a driver's slices be in flux (SLICES_TIMEOUT); the problems seen last."""
        assert self.slice_reader is not None
        reader = self.slice_reader
        started = time.monotonic()
        last = resourceslices.Reading()

        def probe() -> bool | Pending:
            nonlocal last
            last = reader.read()
            return True if not last.problems else Pending("; ".join(last.problems))

        with contextlib.suppress(WaitTimeout):
            until(probe, what=f"valid ResourceSlices of {self.t.driver}", timeout=self.t.slices_timeout)
        took = time.monotonic() - started
        version = f"resource.k8s.io/{reader.version}" if reader.version else "resource.k8s.io"
        where = f"serving node {self.t.node_name}" if self.t.node_name else "(every node)"
        ev.add(f"{when}: {len(last.judged)} ResourceSlice(s) of {self.t.driver} {where} ({took:.1f}s, {version})")
        ev.extend(json.dumps(s.get("spec"), sort_keys=True) for s in last.judged)
        ev.extend(f"note: {n}" for n in last.notes)
        if last.not_judged:
            ev.add(f"not judged: {last.not_judged}")
        problems = [f"{when} (after {took:.0f}s): {p}" for p in last.problems]
        return SliceJudgement(when, problems, last.not_judged, last.notes)


def certify_dra_driver(target: DraDriverTarget, read_claim: dra_claims.ReadClaim | None = None) -> Certification:
    """Certify; with --kubeconfig the --claims are checked first (BadInput before anything starts)."""
    if target.kubeconfig and target.claims:
        read = read_claim or dra_claims.api_reader(target.kubeconfig)
        labels = None if read_claim else dra_claims.node_labels_reader(target.kubeconfig)
        dra_claims.check_claims(target.claims, target.allocated, target.driver, target.node_name, read, labels)
    return DraDriverCertifier(target).run()
