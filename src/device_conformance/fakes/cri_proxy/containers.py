"""What a drop fault leaves out of a ListContainers answer, and the call log's view of the messages the proxy
parses. Messages come from the project's CRI subset (protos/cri/v1/api.proto, field names and numbers of
k8s.io/cri-api pkg/apis/runtime/v1/api.proto): a field the subset lacks is kept as an unknown field when an
answer is parsed and serialised again, so the kubelet gets every field containerd sent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from device_conformance.protos.cri.v1 import api_pb2 as cri

# The labels the kubelet puts on every container it creates (pkg/kubelet/types/labels.go).
POD_NAME_LABEL = "io.kubernetes.pod.name"
POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
CONTAINER = "container"
POD = "pod"
TARGET_FORMS = "'container=NAME' (a container's name) or 'pod=NAMESPACE/NAME' (every container of a pod)"


@dataclass(frozen=True)
class Target:
    """A drop fault's target: containers named `name`, or every container of pod `name` ("NAMESPACE/NAME")."""

    kind: str
    name: str

    def matches(self, container: cri.Container) -> bool:
        if self.kind == CONTAINER:
            return container.metadata.name == self.name
        return pod_of(container) == self.name


def parse_target(target: str) -> Target:
    """`container=main` or `pod=ns/name`; ValueError naming both forms otherwise."""
    kind, eq, name = target.partition("=")
    if not eq or kind not in (CONTAINER, POD) or not name or (kind == POD and name.count("/") != 1):
        raise ValueError(f"drop target {target!r}: give {TARGET_FORMS}")
    if kind == POD and not all(name.split("/")):
        raise ValueError(f"drop target {target!r}: give {TARGET_FORMS}")
    return Target(kind, name)


def pod_of(container: cri.Container) -> str:
    return f"{container.labels.get(POD_NAMESPACE_LABEL, '')}/{container.labels.get(POD_NAME_LABEL, '')}"


def describe(container: cri.Container) -> dict[str, str]:
    return {
        "id": container.id,
        "name": container.metadata.name,
        "pod": pod_of(container),
        "state": cri.ContainerState.Name(container.state),
    }


def drop_containers(answer: bytes, targets: list[str]) -> tuple[bytes, list[dict[str, str]]]:
    """The ListContainers answer without the containers any target names (the rest byte for byte as parsed and
    serialised again, unknown fields included), and those left out."""
    parsed = [parse_target(t) for t in targets]
    response = cri.ListContainersResponse.FromString(answer)
    kept = [c for c in response.containers if not any(t.matches(c) for t in parsed)]
    dropped = [describe(c) for c in response.containers if any(t.matches(c) for t in parsed)]
    if not dropped:
        return answer, []
    del response.containers[:]
    response.containers.extend(kept)
    return response.SerializeToString(), dropped


def request_record(method: str, request: bytes) -> dict[str, Any]:
    """The call log's request of a method the proxy parses. ListContainers: {} is a request without a filter
    (the kubelet's snapshot at start, pkg/kubelet/cm/helpers.go buildContainerMapAndRunningSetFromRuntime, passes
    nil), {"filter": {...}} one with (its runtime manager's listings, even an empty filter)."""
    from device_conformance.fakes.common.rpc import to_dict

    message = {
        "ListContainers": cri.ListContainersRequest,
        "ListPodSandbox": cri.ListPodSandboxRequest,
        "ContainerStatus": cri.ContainerStatusRequest,
    }[method].FromString(request)
    record = to_dict(message)
    if method != "ContainerStatus" and not message.HasField("filter"):
        record.pop("filter", None)
    return record


def response_record(method: str, answer: bytes) -> dict[str, Any]:
    """The call log's summary of an answer: the containers of a ListContainers answer, the sandboxes of a
    ListPodSandbox answer (id, name, pod, state), the size of any other."""
    if method == "ListContainers":
        return {"containers": [describe(c) for c in cri.ListContainersResponse.FromString(answer).containers]}
    if method == "ListPodSandbox":
        items = cri.ListPodSandboxResponse.FromString(answer).items
        return {"sandboxes": [{"id": s.id, "pod": f"{s.metadata.namespace}/{s.metadata.name}"} for s in items]}
    return {"size": len(answer)}
