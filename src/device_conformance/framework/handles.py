"""Small handles for what a test creates: a pod (kube + namespace + name + uid), a pod using a DRA claim,
an extended resource on a node. They carry the identifiers so tests stop passing `kube, namespace, name`
around; every method is one call into kube/ or wait/ (no second copy of a read or a wait lives here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, Self, TypeVar

from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.core.errors import ConformanceError
from device_conformance.kube import dra, nodes, podresources, pods
from device_conformance.kube.client import Kube
from device_conformance.kube.podresources import PodResources
from device_conformance.wait import dra as wait_dra
from device_conformance.wait import kube as wait_kube
from device_conformance.wait import podresources as wait_podresources
from device_conformance.wait.core import Pending, stays

T = TypeVar("T")


class HostPaths(Protocol):
    """What a handle needs of a node's control: its name and where its files are on the test host."""

    name: str

    def host_path(self, node_path: str) -> Any: ...


@dataclass(frozen=True)
class PodHandle:
    """One pod of a test, by namespace and name, with the UID it was created with.

    Waits take their limit from `timeouts`; a pod's start defaults to DEFAULT_START_TIMEOUT. `nodes` are
    the cluster's nodes with file access (empty for an existing cluster): podresources is read on the
    node the pod is bound to."""

    DEFAULT_START_TIMEOUT: ClassVar[float] = timeouts.POD_START

    kube: Kube
    namespace: str
    name: str
    uid: str
    nodes: Sequence[HostPaths] = ()

    @classmethod
    def of(cls, kube: Kube, pod: client.V1Pod, nodes: Sequence[HostPaths] = (), **fields: Any) -> Self:
        """The handle of a V1Pod the API server returned (from create or read)."""
        return cls(kube, pod.metadata.namespace, pod.metadata.name, pod.metadata.uid, tuple(nodes), **fields)

    def __str__(self) -> str:
        return f"pod {self.namespace}/{self.name}"

    # -- reads ----------------------------------------------------------------------------------

    def read(self) -> client.V1Pod:
        return pods.read(self.kube, self.namespace, self.name)

    def summary(self) -> str:
        """Phase, reason, message and container states, as the waits report them."""
        return pods.summary(self.read())

    def logs(self, container: str = "main") -> str:
        return pods.logs(self.kube, self.namespace, self.name, container)

    def events(self) -> list[str]:
        return pods.events(self.kube, self.namespace, self.name)

    def read_if_present(self) -> client.V1Pod | None:
        """The pod as it is now, or None once the API server no longer has it (a probe that checks a
        deleted pod is still Terminating says "gone" instead of crashing on the 404)."""
        try:
            return self.read()
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # -- waits ----------------------------------------------------------------------------------

    def wait_running(self, timeout: float | None = None) -> client.V1Pod:
        """Running and Ready (ends early when the pod ends instead)."""
        return wait_kube.for_pod_running_ready(self.kube, self.namespace, self.name, timeout=self._start(timeout))

    def wait_phase(self, phase: str, timeout: float | None = None) -> client.V1Pod:
        return wait_kube.for_pod_phase(self.kube, self.namespace, self.name, phase, timeout=self._start(timeout))

    def wait_admission_failure(self, timeout: float | None = None) -> client.V1Pod:
        """Failed, as a kubelet admission rejection leaves it; check status.reason and .message."""
        return wait_kube.for_admission_failure(self.kube, self.namespace, self.name, timeout=self._start(timeout))

    def wait_restarted(self, container: str = "main", at_least: int = 1, timeout: float | None = None) -> client.V1Pod:
        """The kubelet restarted `container` at least `at_least` times."""
        return wait_kube.for_container_restarts(
            self.kube, self.namespace, self.name, container, at_least, timeout=self._start(timeout)
        )

    def wait_gone(self, timeout: float = timeouts.POD_GONE) -> None:
        wait_kube.for_pod_gone(self.kube, self.namespace, self.name, timeout=timeout)

    def wait_marked_for_deletion(self, timeout: float = timeouts.POD_GONE) -> None:
        """Someone deleted the pod: it has a deletionTimestamp (Terminating) or is gone."""
        wait_kube.for_pod_marked_for_deletion(self.kube, self.namespace, self.name, timeout=timeout)

    def log_line(self, prefix: str, container: str = "main", timeout: float = timeouts.POD_LOG_LINE) -> str:
        """The rest of the first line of the container's log that starts with `prefix` (waits for it)."""
        return wait_kube.for_log_line(self.kube, self.namespace, self.name, prefix, container, timeout=timeout)

    def wait_event(self, text: str, timeout: float = timeouts.CLAIM) -> str:
        """The first event of the pod whose "<type> <reason> <kind>/<name>: <message>" line contains text."""
        return wait_dra.for_event(self.kube, self.namespace, self.name, text, timeout=timeout)

    def wait_condition(self, type_: str, timeout: float = timeouts.CLAIM) -> client.V1PodCondition:
        """The pod condition `type_` with status True (e.g. DisruptionTarget)."""
        return wait_dra.for_pod_condition(self.kube, self.namespace, self.name, type_, timeout=timeout)

    def stays(self, broken: Callable[[client.V1Pod], str | None], *, what: str, duration: float) -> None:
        """Assert `broken(pod)` stays None (it returns what went wrong) for `duration` seconds."""
        stays(lambda: broken(self.read()), what=f"{self} {what}", duration=duration)

    # -- the node's podresources API ------------------------------------------------------------

    def podresources(self) -> PodResources | None:
        """What podresources lists for the pod right now (one List call, no waiting); None if unlisted."""
        return podresources.find_pod(podresources.list_pod_resources(self._socket()), self.name, self.namespace)

    def wait_podresources(self, timeout: float = timeouts.PODRESOURCES_LISTED) -> PodResources:
        """The pod's podresources entry, once the kubelet lists it."""
        return wait_podresources.for_listed_pod(self._socket(), self.namespace, self.name, timeout=timeout)

    def wait_podresources_gone(self, timeout: float = timeouts.PODRESOURCES_LISTED) -> None:
        wait_podresources.for_unlisted_pod(self._socket(), self.namespace, self.name, timeout=timeout)

    def devices(self, resource: str, container: str = "main") -> list[str]:
        """The device IDs of `resource` podresources reports for one container (waits for the listing)."""
        return wait_podresources.device_ids(self._socket(), self.namespace, self.name, resource, container)

    # -- deletion -------------------------------------------------------------------------------

    def delete(self) -> None:
        """An ordinary delete: the kubelet stops the containers (grace period of the pod spec)."""
        self.kube.core.delete_namespaced_pod(self.name, self.namespace)

    def force_delete(self) -> None:
        """Grace 0: the API object goes at once, whatever the kubelet is doing."""
        pods.force_delete(self.kube, self.namespace, self.name)

    # -- plumbing -------------------------------------------------------------------------------

    def _start(self, timeout: float | None) -> float:
        return self.DEFAULT_START_TIMEOUT if timeout is None else timeout

    def _socket(self) -> str:
        return str(self._node().host_path(podresources.DEFAULT_SOCKET))

    def _node(self) -> HostPaths:
        if not self.nodes:
            raise ConformanceError(f"no node file access for podresources of {self} (needs the local or kind provider)")
        if len(self.nodes) == 1:
            return self.nodes[0]
        bound = self.read().spec.node_name
        for node in self.nodes:
            if node.name == bound:
                return node
        raise ConformanceError(f"{self} is bound to node {bound!r}, not one of {[n.name for n in self.nodes]}")


# The node authorizer learns pod -> claim from pod.status.resourceClaimStatuses through its own informer, which can
# lag the kubelet (plugin/pkg/auth/authorizer/node; timeouts.CLAIM_POD_START): the kubelet's first fetch of a new
# claim may be refused with this, and its prepare is tried again at the pod's next sync.
NODE_AUTHORIZER_LAG = "no relationship found between node"


@dataclass(frozen=True, kw_only=True)
class ClaimPodHandle(PodHandle):
    """A pod whose containers use one DRA claim under the pod-level name `claim_ref`: either a shared
    ResourceClaim (`shared_claim`) or one the resourceclaim controller generates from a template."""

    DEFAULT_START_TIMEOUT: ClassVar[float] = timeouts.CLAIM_POD_START

    resource_api: str
    claim_ref: str = "dev"
    shared_claim: str | None = None

    def claim_name(self, timeout: float = timeouts.CLAIM) -> str:
        """The ResourceClaim the pod uses: the shared one, or (waiting for it) the generated one."""
        if self.shared_claim is not None:
            return self.shared_claim
        return wait_dra.for_generated_claim(self.kube, self.namespace, self.name, self.claim_ref, timeout=timeout)

    def claim(self) -> dict[str, Any]:
        """The ResourceClaim object as it is now."""
        return dra.get_claim(self.kube, self.resource_api, self.namespace, self.claim_name())

    def claim_uid(self) -> str:
        return self.claim()["metadata"]["uid"]

    def allocated_devices(self) -> list[str]:
        """Device names of the claim's allocation results, in order (empty while unallocated)."""
        results = ((self.claim().get("status") or {}).get("allocation") or {}).get("devices") or {}
        return [result["device"] for result in results.get("results") or []]

    def wait_claim(
        self, condition: Callable[[dict[str, Any]], bool], what: str, timeout: float = timeouts.CLAIM
    ) -> dict[str, Any]:
        """The claim once condition(claim) holds; `what` completes "ResourceClaim <ns>/<name> ..."."""
        name = self.claim_name()
        return wait_dra.for_claim(self.kube, self.resource_api, self.namespace, name, condition, what, timeout)

    def wait_running(self, timeout: float | None = None) -> client.V1Pod:
        """Running and Ready; every failed prepare the kubelet reports gives the wait another `timeout`, in which
        its next attempt is due (wait/dra.py with_prepare_retries): a driver may fail a claim, then prepare it."""
        return wait_dra.for_claim_pod_running(self.kube, self.namespace, self.name, stall=self._start(timeout))

    def wait_while_preparing(
        self, probe: Callable[[], T | Pending | None], what: str, timeout: float | None = None
    ) -> T:
        """Until probe yields, with the same allowance for the kubelet's prepare retries as wait_running."""
        return wait_dra.with_prepare_retries(
            self.kube, self.namespace, self.name, probe, what=what, stall=self._start(timeout)
        )

    def wait_prepare_refusal(self, timeout: float = timeouts.CLAIM_POD_START) -> str:
        """The kubelet's first FailedPrepareDynamicResources event of the pod other than the node authorizer's lag
        (NODE_AUTHORIZER_LAG): the refusal a test checks the words of."""
        return wait_dra.for_event(
            self.kube, self.namespace, self.name, "FailedPrepareDynamicResources", timeout, unless=NODE_AUTHORIZER_LAG
        )

    def wait_unschedulable(self, timeout: float = timeouts.CLAIM) -> str:
        """PodScheduled=False, reason Unschedulable; returns the scheduler's message."""
        return wait_dra.for_pod_unschedulable(self.kube, self.namespace, self.name, timeout=timeout)

    def wait_claim_gone(self, name: str | None = None, timeout: float = timeouts.CLAIM) -> None:
        """Until the claim is deleted. A generated claim goes after its pod, whose status names it: pass
        `name` (claim_name() read while the pod was there) once the pod is gone."""
        claim = name or self.claim_name()
        wait_dra.for_claim_gone(self.kube, self.resource_api, self.namespace, claim, timeout=timeout)


@dataclass(frozen=True)
class NodeResource:
    """An extended resource on one node as a user sees it: capacity and allocatable in node status."""

    kube: Kube
    node: str
    name: str

    def __str__(self) -> str:
        return f"{self.name} on node {self.node}"

    def counts(self) -> tuple[int | None, int | None]:
        """(capacity, allocatable) now; None where the key is absent."""
        return nodes.resource_counts(self.kube, self.node, self.name)

    def wait_counts(
        self, capacity: int | None, allocatable: int | None, timeout: float = timeouts.DEVICE_COUNTS
    ) -> None:
        """Until the node reports exactly these counts (use DEVICE_COUNTS_AFTER_RESTART after restarts)."""
        wait_kube.for_resource_counts(self.kube, self.node, self.name, capacity, allocatable, timeout=timeout)

    def stays_at(self, capacity: int | None, allocatable: int | None, duration: float) -> None:
        """Assert the counts hold still for `duration` seconds."""
        wanted = (capacity, allocatable)

        def probe() -> str | None:
            seen = self.counts()
            return None if seen == wanted else f"capacity/allocatable {seen}"

        stays(probe, what=f"{self} to stay at capacity/allocatable {wanted}", duration=duration)
