"""A node's kubelet metrics, read through the API server's node proxy (GET /api/v1/nodes/<node>/proxy/metrics:
the same path on every provider, with the suite's admin credentials), and the Prometheus text format parsed
just enough to read one metric's samples."""

from __future__ import annotations

import re

from device_conformance.errors import BadInput
from device_conformance.kube.client import Kube

# name{label="value",...} value [timestamp]   (Prometheus text exposition format 0.0.4)
_SAMPLE = re.compile(r"^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?P<labels>.*)\})?\s+(?P<value>\S+)(\s+\S+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def kubelet_metrics(kube: Kube, node_name: str) -> str:
    """The kubelet's /metrics, as text. Read unparsed: the client's "str" deserialization of this reply is the
    repr of its bytes (b'# HELP ...\\n...'), not the text."""
    reply = kube.core.connect_get_node_proxy_with_path(node_name, "metrics", _preload_content=False)
    return reply.data.decode("utf-8")


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of metric `name`: (labels, value), in the order the text lists them."""
    found = []
    for line in text.splitlines():
        if not line.startswith(name) or line.startswith("#"):
            continue
        match = _SAMPLE.match(line.strip())
        if match is None or match["name"] != name:
            continue
        labels = {key: _unescape(value) for key, value in _LABEL.findall(match["labels"] or "")}
        found.append((labels, float(match["value"])))
    return found


def by_label(text: str, name: str, label: str) -> dict[str, float]:
    """Metric `name`'s samples keyed by the value of `label` (a gauge vector with that one label)."""
    result: dict[str, float] = {}
    for labels, value in samples(text, name):
        if label not in labels:
            raise BadInput(f"metric {name} has a sample without label {label!r}: {labels}", f"key it by {list(labels)}")
        result[labels[label]] = value
    return result


def _unescape(value: str) -> str:
    return value.replace(r"\"", '"').replace(r"\n", "\n").replace("\\\\", "\\")
