"""`certify dra-driver --claims auto` (and `certify dra-test-driver`): sanity claims the certifier makes itself
from the ResourceSlices the driver publishes, for drivers whose device names exist only once they run.

A driver prepares only claims it reads from the API server as allocated to it (upstream's kubeletplugin helper,
k8s.io/dynamic-resource-allocation kubeletplugin/draplugin.go nodePluginImplementation.getResourceClaims: a GET
by namespace and name, "claim %s/%s not allocated" without status.allocation, "claim %s/%s got replaced" for
another UID). So, once the driver serves, this module waits for devices of its slices available to the node, picks
one free device per claim (distinct, none another claim holds, none tainted NoSchedule/NoExecute) and writes in a
namespace of its own what the scheduler writes for a pod using those claims: a DeviceClass of the driver, the
claims, their status.allocation (one result per request, and the nodeSelector the scheduler derives from the
device's slice) and status.reservedFor naming a consumer pod that is never scheduled. All of it is deleted
afterwards, also on Ctrl-C, SIGTERM or an error.

A device is available to the node as the scheduler decides it: from slices with spec.nodeName, spec.allNodes, a
spec.nodeSelector or per-device node selection (dra_slice_devices.py). The API calls are in dra_auto_claims_api.py.

Bad input (no API server, no resource.k8s.io, an unknown node, no slices for the node within the ceiling,
fewer free devices than claims) is one BadInput naming the fix, raised after deleting what was made.
"""

from __future__ import annotations

import secrets
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from device_conformance.certify import dra_claims
from device_conformance.certify.dra_auto_claims_api import FIX_KUBECONFIG, ClusterApi, KubeApi, api_error
from device_conformance.certify.dra_slice_devices import (
    Device,
    available_devices,
    node_devices,
    serves_node,
    slice_target,
    used_devices,
)
from device_conformance.core.errors import BadInput, WaitTimeout
from device_conformance.core.interrupts import deferred_interrupts
from device_conformance.fakes.dra_driver.kubelet_client import Claim
from device_conformance.kube import dra
from device_conformance.wait.core import Abort, Pending, until

AUTO = "auto"  # --claims auto
# Two claims serve every clause: DRA-PREPARE-MULTI and DRA-RESTART send a second claim with the first.
CLAIM_COUNT = 2
REQUEST = "dev"
# The resource.k8s.io versions whose objects this module writes, preferred first: v1 is served from 1.34,
# v1beta2 from 1.33, v1beta1 from 1.32 (kube/dra.py writes a claim's requests in each one's shape).
VERSIONS = ("v1", "v1beta2", "v1beta1")
# A driver publishes its slices within seconds of serving; only a hang reaches this.
SLICES_CEILING = 180.0
# Slices that are there but hold too few free devices: as long as the kubelet lets a driver's slices be in
# flux (pkg/kubelet/cm/dra/manager.go defaultWipingDelay = 30 s, dra_driver.SLICES_TIMEOUT) without a change,
# then the answer is final.
SETTLE = 30.0
DELETE_TIMEOUT = 60.0
# The service account controller adds a new namespace's "default" ServiceAccount within a second or two.
SERVICE_ACCOUNT_TIMEOUT = 30.0
LABELS = {"app.kubernetes.io/managed-by": "device-conformance", "device-conformance.io/certify": "auto-claims"}
# A scheduling gate nobody removes keeps the consumer pod from ever being scheduled or run (KEP-3521, GA in
# 1.30): it exists only so that status.reservedFor names a real pod.
GATE = "device-conformance.io/never-scheduled"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"  # never pulled: the pod is never scheduled

FIX_API = (
    "use a cluster that serves resource.k8s.io v1 (Kubernetes 1.34+), v1beta2 or v1beta1 (1.32/1.33 with the "
    "DynamicResourceAllocation feature gate and --runtime-config=resource.k8s.io/v1beta1=true), or give "
    "--claims FILE instead of --claims auto"
)
FIX_RBAC = (
    "use a --kubeconfig whose user may create and delete namespaces, pods, resourceclaims (and update "
    "resourceclaims/status) and deviceclasses, and list nodes, resourceslices and resourceclaims (cluster-admin "
    "may), or give --claims FILE"
)


@dataclass
class MadeClaims:
    """What DraDriverTarget needs: the claims, UID -> allocated device names, and a line for the report."""

    claims: list[Claim]
    allocated: dict[str, list[str]]
    note: str


# -- the objects, as pure functions -------------------------------------------------------------------------


def served_version(versions: list[str]) -> str:
    """The preferred resource.k8s.io version of VERSIONS the API server serves, e.g. "resource.k8s.io/v1"."""
    for version in VERSIONS:
        if version in versions:
            return f"{dra.GROUP}/{version}"
    served = f"only {sorted(versions)}" if versions else "no version of it"
    raise BadInput(f"--claims auto: the API server serves {served} of resource.k8s.io (DRA)", FIX_API)


def device_class_manifest(name: str, driver: str, api_version: str) -> dict[str, Any]:
    """A DeviceClass selecting every device of the driver, as upstream's e2e makes one per driver
    (test/e2e/dra/utils/builder.go Builder.Class): each request names a class (DeviceRequest.Exactly)."""
    return {
        "apiVersion": api_version,
        "kind": "DeviceClass",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]},
    }


def claim_manifest(name: str, device_class: str, api_version: str) -> dict[str, Any]:
    """A ResourceClaim asking for one device of the class through request REQUEST, in the version's shape."""
    spec = dra.claim_spec([dra.device_request(device_class, name=REQUEST)])
    body = dra.claim_manifest(name, spec, api_version)
    body["metadata"]["labels"] = dict(LABELS)
    return dra.in_api_version(body)


def consumer_pod_manifest(name: str, claim_names: list[str]) -> dict[str, Any]:
    """The pod the claims are reserved for, using all of them as a pod with two claims of one driver does; a
    scheduling gate keeps it from ever being scheduled, so no kubelet runs it. Restricted-profile settings
    so that a namespace enforcing Pod Security admits it."""
    entries = [{"name": f"claim-{n}", "resourceClaimName": c} for n, c in enumerate(claim_names)]
    container = {
        "name": "consumer",
        "image": PAUSE_IMAGE,
        "resources": {"claims": [{"name": e["name"]} for e in entries]},
        "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(LABELS)},
        "spec": {
            "schedulingGates": [{"name": GATE}],
            "resourceClaims": entries,
            "containers": [container],
            "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
        },
    }


def allocation(driver: str, device: Device, selector: dict[str, Any] | None) -> dict[str, Any]:
    """status.allocation as the scheduler writes it for one device (dynamic-resource-allocation
    structured/internal/stable/allocator_stable.go: one result per allocated device, and the nodeSelector
    createNodeSelector derives from the device's slice: allocation_node_selector)."""
    # k8s.io/api resource/v1 types.go DeviceRequestAllocationResult: `request` "is the name of the request in
    # the claim which caused this device to be allocated" (drivers find the request's config by it:
    # resourceclaim.ConfigForResult in dra-example-driver's state.go), `driver` "specifies the name of the DRA
    # driver whose kubelet plugin should be invoked" (drivers skip other drivers' results), `pool` and
    # `device` identify the device (`<driver name>/<pool name>/<device name>`; dra-example-driver's
    # prepareDevices refuses a device it does not publish: "requested GPU is not allocatable").
    result = {"request": REQUEST, "driver": driver, "pool": device.pool, "device": device.name}
    # AllocationResult.NodeSelector "defines where the allocated resources are available. If unset, they are
    # available everywhere": node-local devices on their node, others where their slice's selector says.
    allocated: dict[str, Any] = {"devices": {"results": [result]}}
    if selector is not None:
        allocated["nodeSelector"] = selector
    return allocated


def reserved_for(pod: dict[str, Any]) -> list[dict[str, Any]]:
    """status.reservedFor as the scheduler writes it for the pod it binds (ResourceClaimConsumerReference: core
    group, so no apiGroup; resource, name and UID required). ResourceClaimStatus.ReservedFor: "A Pod which
    references a ResourceClaim which is not reserved for that Pod will not be started"; drivers read it, e.g. a
    network driver keying a claim by reserved.UID for its NRI pod hooks (kubernetes-sigs/dranet
    nodePrepareResource). The pod must exist: the resource claim controller removes a reservation whose pod is
    gone (pkg/controller/resourceclaim/controller.go syncClaim)."""
    meta = pod["metadata"]
    return [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}]


def with_status(created: dict[str, Any], allocated: dict[str, Any], reserved: list[dict[str, Any]]) -> dict[str, Any]:
    """The created claim (its resourceVersion kept, so the status update is checked against it) with its
    status.allocation and status.reservedFor set."""
    body = dict(created)
    body["status"] = {**(created.get("status") or {}), "allocation": allocated, "reservedFor": reserved}
    return body


def target_claims(stored: list[dict[str, Any]], driver: str) -> tuple[list[Claim], dict[str, list[str]]]:
    """(claims, allocated) for DraDriverTarget from stored claims: (namespace, uid, name) and UID -> devices."""
    claims: list[Claim] = []
    allocated: dict[str, list[str]] = {}
    for claim in stored:
        meta = claim["metadata"]
        claims.append((meta["namespace"], meta["uid"], meta["name"]))
        results = claim["status"]["allocation"]["devices"]["results"]
        allocated[meta["uid"]] = [r["device"] for r in results if r["driver"] == driver]
    return claims, allocated


# -- making and deleting them ---------------------------------------------------------------------------------


class AutoClaims:
    """check() before the subject starts, make() once it serves, delete() always (session() does it)."""

    def __init__(
        self,
        api: ClusterApi,
        driver: str,
        node: str,
        *,
        count: int = CLAIM_COUNT,
        log: Callable[[str], None] = print,
        ceiling: float = SLICES_CEILING,
        settle: float = SETTLE,
        suffix: str | None = None,
    ) -> None:
        self.api, self.driver, self.node, self.count, self.log = api, driver, node, count, log
        self.ceiling, self.settle = ceiling, settle
        # Names fixed before anything is created, so delete() finds whatever a create left, even one that a
        # Ctrl-C cut off before it answered.
        self.namespace = f"dc-certify-claims-{suffix or secrets.token_hex(3)}"
        self.device_class = self.namespace
        self.claim_names = [f"certify-claim-{n}" for n in range(count)]
        self.pod_name = "certify-consumer"
        self.api_version = ""
        self.labels: dict[str, str] = {}  # the node's, for slices that select nodes by label
        # Device -> the nodeSelector its allocation gets, from the last look at the slices.
        self.selectors: dict[Device, dict[str, Any] | None] = {}
        self._started: set[str] = set()  # kinds whose creation began: "namespace", "class"
        self.made: MadeClaims | None = None

    @property
    def _version(self) -> str:
        return self.api_version.split("/", 1)[1]

    def check(self) -> None:
        """Before the subject starts: the API server answers, serves resource.k8s.io, and knows the node."""
        try:
            versions = self.api.resource_versions()
        except Exception as exc:
            raise BadInput(f"--claims auto: the API server does not answer ({api_error(exc)})", FIX_KUBECONFIG) from exc
        self.api_version = served_version(versions)
        try:
            labels = self.api.node_labels(self.node)
            nodes = [] if labels is not None else self.api.node_names()
        except Exception as exc:
            raise BadInput(f"--claims auto: reading node {self.node}: {api_error(exc)}", FIX_RBAC) from exc
        self.labels = labels or {}
        if labels is None:
            raise BadInput(
                f"--claims auto: node {self.node!r} is not in the API server (nodes: {sorted(nodes)})",
                "give --node the name of the node the driver runs for and publishes ResourceSlices for",
            )

    # -- make --------------------------------------------------------------------------------------------

    def make(self, subject_gone: Callable[[], str | None] = lambda: None) -> MadeClaims:
        """Wait for free devices in the driver's slices for the node, then create and allocate the claims.
        `subject_gone` names why the subject stopped (None while it runs): no claims then, the crash is the
        next clause's FAIL. A failure deletes what was made before it is raised."""
        if not self.api_version:
            self.check()
        try:
            devices = self._wait_for_devices(subject_gone)
        except Abort as exc:
            self.log(f"--claims auto: no claims made: {exc}")
            return MadeClaims([], {}, f"--claims auto: no claims made: {exc}")
        try:
            self.made = self._create(devices)
        except BaseException:
            self.delete()
            raise
        return self.made

    def _free(self) -> tuple[list[Device], list[dict[str, Any]], list[str], set[Device]]:
        """Free devices available to the node, the driver's slices serving it, why devices were left out, and
        the devices other claims hold."""
        slices = self.api.list_slices(self._version, self.driver)
        serving = [s for s in slices if serves_node(s, self.node, self.labels)]
        self.selectors, skipped = available_devices(serving, self.driver, self.node, self.labels)
        used = used_devices(self.api.list_claims(self._version), self.driver) if self.selectors else set()
        return [d for d in self.selectors if d not in used], serving, skipped, used

    def _wait_for_devices(self, subject_gone: Callable[[], str | None]) -> list[Device]:
        started = time.monotonic()
        seen: dict[str, Any] = {"slices": [], "skipped": [], "used": set(), "versions": None, "since": started}

        def probe() -> list[Device] | Pending:
            gone = subject_gone()
            if gone:
                raise Abort(gone)
            try:
                free, slices, skipped, used = self._free()
            except Exception as exc:
                if getattr(exc, "status", None) in (401, 403):  # waiting will not change it
                    raise _Refused(api_error(exc)) from exc
                raise  # "not yet" (until): an API hiccup
            versions = sorted((s["metadata"]["name"], s["metadata"].get("resourceVersion")) for s in slices)
            if versions != seen["versions"]:
                seen.update(versions=versions, since=time.monotonic())
            seen.update(slices=slices, skipped=skipped, used=used)
            if len(free) >= self.count:
                return free[: self.count]
            if slices and time.monotonic() - seen["since"] >= self.settle:
                raise _TooFew(free)
            return Pending(f"{len(slices)} slice(s), free devices {[f'{d.pool}/{d.name}' for d in free]}")

        what = f"{self.count} free devices of {self.driver} in ResourceSlices for node {self.node}"
        try:
            picked = until(probe, what=what, timeout=self.ceiling)
        except _TooFew as exc:
            raise self._too_few(exc.free, seen) from None
        except _Refused as exc:
            raise BadInput(f"--claims auto: listing ResourceSlices and ResourceClaims: {exc}", FIX_RBAC) from exc
        except WaitTimeout as exc:
            if seen["slices"]:
                devices = node_devices(seen["slices"], self.driver, self.node, self.labels)[0]
                free = [d for d in devices if d not in seen["used"]]
                raise self._too_few(free, seen) from None
            raise self._no_slices() from exc
        self.log(f"--claims auto: devices {[f'{d.pool}/{d.name}' for d in picked]} of node {self.node}")
        return picked

    def _no_slices(self) -> BadInput:
        try:
            others = sorted({slice_target(s) for s in self.api.list_slices(self._version, self.driver)})
        except Exception as exc:
            others = [f"(listing failed: {api_error(exc)})"]
        elsewhere = f"; it has slices for {', '.join(others)}" if others else ""
        return BadInput(
            f"--claims auto: driver {self.driver} published no ResourceSlice for node {self.node} within "
            f"{self.ceiling:.0f}s{elsewhere}",  # the ceiling, not the time measured: the same on a busy machine
            "check that --driver is the name the driver publishes under and --node a node its slices serve "
            "(spec.nodeName, spec.allNodes, a spec.nodeSelector matching the node's labels, or per device; "
            "kubectl get resourceslices -o custom-columns=NAME:.metadata.name,DRIVER:.spec.driver,"
            "NODE:.spec.nodeName,ALL:.spec.allNodes), that the driver can reach this API server, or give "
            "--claims FILE naming claims allocated to this node",
        )

    def _too_few(self, free: list[Device], seen: dict[str, Any]) -> BadInput:
        listed = lambda devices: [f"{d.pool}/{d.name}" for d in sorted(devices)]  # noqa: E731
        held = sorted(d for d in seen["used"])
        details = [f"free {listed(free)}"]
        if held:
            details.append(f"held by other claims {listed(held)}")
        details += seen["skipped"]
        return BadInput(
            f"--claims auto: driver {self.driver} publishes {len(free)} free device(s) for node {self.node}, "
            f"{self.count} needed (one per claim): " + "; ".join(details),
            "free devices of this driver on the node (delete the pods and claims holding them), let the driver "
            "publish at least two, or give --claims FILE naming claims allocated to this node",
        )

    def _create(self, devices: list[Device]) -> MadeClaims:
        version = self._version
        try:
            self._started.add("namespace")
            self.api.create_namespace(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace, "labels": dict(LABELS)}}
            )
            self._started.add("class")
            self.api.create_device_class(
                version, device_class_manifest(self.device_class, self.driver, self.api_version)
            )
            created = [
                self.api.create_claim(version, self.namespace, claim_manifest(n, self.device_class, self.api_version))
                for n in self.claim_names
            ]
            pod = self._create_pod()
            for claim, device in zip(created, devices, strict=True):
                allocated = allocation(self.driver, device, self.selectors.get(device))
                body = with_status(claim, allocated, reserved_for(pod))
                self.api.replace_claim_status(version, self.namespace, body)
            # Read back as the kubeletplugin helper does (a GET by namespace and name), checked as --claims is.
            stored = [self.api.get_claim(version, self.namespace, n) for n in self.claim_names]
        except BadInput:
            raise
        except Exception as exc:
            raise BadInput(
                f"--claims auto: creating the claims in {self.namespace}: {api_error(exc)}", FIX_RBAC
            ) from exc
        claims, allocated = target_claims([s for s in stored if s], self.driver)
        dra_claims.check_claims(
            claims,
            allocated,
            self.driver,
            self.node,
            lambda ns, name: self.api.get_claim(version, ns, name),
            lambda _: self.labels,
        )
        note = (
            f"--claims auto: claims {[c[2] for c in claims]} made in namespace {self.namespace} ({self.api_version}), "
            f"allocated to node {self.node} with devices "
            f"{[f'{d.pool}/{d.name}' for d in devices]}, reserved for pod {self.pod_name}; deleted afterwards"
        )
        self.log(note)
        return MadeClaims(claims, allocated, note)

    def _create_pod(self) -> dict[str, Any]:
        """The consumer pod, once the namespace's "default" ServiceAccount exists: the service account controller
        makes it a moment after the namespace, and until then the ServiceAccount admission plugin refuses every
        pod there (HTTP 403 "error looking up service account <ns>/default")."""
        deadline = time.monotonic() + SERVICE_ACCOUNT_TIMEOUT
        while True:
            try:
                return self.api.create_pod(self.namespace, consumer_pod_manifest(self.pod_name, self.claim_names))
            except Exception as exc:
                waiting = "error looking up service account" in str(getattr(exc, "body", None) or exc)
                if not waiting or time.monotonic() > deadline:
                    raise
            time.sleep(0.2)

    # -- delete ------------------------------------------------------------------------------------------

    def delete(self) -> None:
        """Delete whatever was made (by its fixed names; gone already is fine), holding Ctrl-C and SIGTERM until
        done, and wait for the namespace to go. Logs what could not be deleted, with the command that does."""
        if not self._started:
            return
        version = self._version
        left: list[str] = []

        def attempt(what: str, call: Callable[[], None]) -> None:
            try:
                call()
            except Exception as exc:
                if getattr(exc, "status", None) != 404:
                    left.append(f"{what} ({api_error(exc)})")

        with deferred_interrupts(self.log):
            if "namespace" in self._started:
                # No finalizers on these claims (the scheduler's delete-protection finalizer waits for the
                # resource claim controller), and an unscheduled pod goes at once: both are gone on return.
                for name in self.claim_names:
                    attempt(
                        f"resourceclaim {self.namespace}/{name}",
                        lambda n=name: self.api.delete_claim(version, self.namespace, n),
                    )
                attempt(
                    f"pod {self.namespace}/{self.pod_name}", lambda: self.api.delete_pod(self.namespace, self.pod_name)
                )
                attempt(f"namespace {self.namespace}", lambda: self.api.delete_namespace(self.namespace))
            if "class" in self._started:
                attempt(
                    f"deviceclass {self.device_class}", lambda: self.api.delete_device_class(version, self.device_class)
                )
            if "namespace" in self._started:
                try:
                    until(
                        lambda: True if not self.api.namespace_exists(self.namespace) else Pending("Terminating"),
                        what=f"namespace {self.namespace} to be deleted",
                        timeout=DELETE_TIMEOUT,
                    )
                except WaitTimeout:
                    left.append(f"namespace {self.namespace} (still Terminating after {DELETE_TIMEOUT:.0f}s)")
        self._started.clear()
        if left:
            self.log(
                f"--claims auto: could not delete {left}; remove them with: kubectl delete namespace {self.namespace}; "
                f"kubectl delete deviceclass {self.device_class}"
            )
        else:
            self.log(f"--claims auto: deleted namespace {self.namespace} and deviceclass {self.device_class}")


class _Refused(Abort):
    pass


class _TooFew(Abort):
    def __init__(self, free: list[Device]) -> None:
        super().__init__("too few free devices")
        self.free = free


def _sigterm_as_interrupt(_signum: int, _frame: FrameType | None) -> None:
    # CI stops runs with SIGTERM; as Ctrl-C it reaches the finally that deletes the claims.
    raise KeyboardInterrupt


@contextmanager
def session(
    kubeconfig: str | Path | None,
    driver: str,
    node: str | None,
    *,
    log: Callable[[str], None] = print,
    api: ClusterApi | None = None,
    **options: Any,
) -> Iterator[AutoClaims]:
    """AutoClaims for the cluster, checked (BadInput before anything is made); what it made is deleted on
    leaving, also on an exception, Ctrl-C or SIGTERM."""
    if not kubeconfig or not node:
        raise BadInput("--claims auto needs --kubeconfig and --node", FIX_KUBECONFIG)
    owned = api is None
    if api is None:
        if not Path(kubeconfig).is_file():
            raise BadInput(f"--kubeconfig {kubeconfig}: no such file", FIX_KUBECONFIG)
        api = KubeApi(str(kubeconfig))
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _sigterm_as_interrupt) if main else None
    try:
        auto = AutoClaims(api, driver, node, log=log, **options)
        auto.check()
        try:
            yield auto
        finally:
            auto.delete()
    finally:
        if main:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
        if owned and isinstance(api, KubeApi):
            api.close()
