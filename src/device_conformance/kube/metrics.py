"""A node's kubelet metrics, read through the API server's node proxy (GET /api/v1/nodes/<node>/proxy/metrics:
the same path on every provider, with the suite's admin credentials), parsed by prometheus_client's parser of
the Prometheus text exposition format."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from device_conformance.core.errors import BadInput
from device_conformance.kube.client import Kube


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def kubelet_metrics(kube: Kube, node_name: str) -> str:
    """The kubelet's /metrics, as text. Read unparsed: the client's "str" deserialization of this reply is the
    repr of its bytes (b'# HELP ...\\n...'), not the text."""
    reply = kube.core.connect_get_node_proxy_with_path(
        node_name, "metrics", _preload_content=False, _request_timeout=15
    )
    return reply.data.decode("utf-8")


def apiserver_metrics(kube: Kube) -> str:
    """The API server's own /metrics, as text (`kubectl get --raw /metrics`), read unparsed as kubelet_metrics."""
    reply = kube.api_client.call_api(
        "/metrics",
        "GET",
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        _preload_content=False,
        _request_timeout=15,
    )
    return reply.data.decode("utf-8")


def parse(text: str) -> list[Sample]:
    """Every sample, in the order the text lists them (a histogram's _bucket/_count/_sum under their own names)."""
    return [
        Sample(sample.name, dict(sample.labels), float(sample.value))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    ]


def read(kube: Kube, node_name: str) -> list[Sample]:
    """The kubelet's samples now (API server -> kubelet, as `kubectl get --raw /api/v1/nodes/N/proxy/metrics`)."""
    return parse(kubelet_metrics(kube, node_name))


def total(samples: list[Sample], name: str, **labels: str) -> int:
    """The sum of `name` over the samples whose labels include `labels` (0 when there is none)."""
    return int(sum(s.value for s in samples if s.name == name and _matches(s.labels, labels)))


def by_label(samples: list[Sample], name: str, label: str) -> dict[str, float]:
    """Metric `name`'s samples keyed by the value of `label` (a gauge vector with that one label)."""
    result: dict[str, float] = {}
    for sample in samples:
        if sample.name != name:
            continue
        if label not in sample.labels:
            raise BadInput(
                f"metric {name} has a sample without label {label!r}: {sample.labels}",
                f"key it by {list(sample.labels)}",
            )
        result[sample.labels[label]] = sample.value
    return result


def _matches(have: Mapping[str, str], want: Mapping[str, str]) -> bool:
    return all(have.get(k) == v for k, v in want.items())
