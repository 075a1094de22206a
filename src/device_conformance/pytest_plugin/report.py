"""A failing e2e test explains itself: kubelet log since the test started, node status, pod events,
and every fake plugin / driver call log the test registered."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator
from pathlib import Path

import pytest

from device_conformance.fixtures.cluster import KUBELET_LOG_MARK
from device_conformance.fixtures.pods import NAMESPACE_STASH
from device_conformance.fixtures.reports import EXTRA_REPORTS
from device_conformance.kube import pods
from device_conformance.kube.client import Kube

KUBELET_LOG_LINES = 200


def _safe(producer: Callable[[], str]) -> str:
    try:
        return producer()
    except Exception as exc:  # a broken cluster must not hide the original failure
        return f"(could not collect: {type(exc).__name__}: {exc})"


def _sections(item: pytest.Item) -> list[tuple[str, str]]:
    sections: list[tuple[str, str]] = []
    funcargs = getattr(item, "funcargs", {})
    if KUBELET_LOG_MARK in item.stash:
        node, mark = item.stash[KUBELET_LOG_MARK]
        tail = "\n".join(_safe(lambda: node.kubelet.log_since(mark)).splitlines()[-KUBELET_LOG_LINES:])
        sections.append((f"kubelet log since test start (last {KUBELET_LOG_LINES} lines)", tail))
    kube = funcargs.get("kube")
    handle = funcargs.get("cluster")
    if kube is not None and handle is not None:
        for node in handle.nodes:
            sections.append((f"node {node.name} status", _safe(lambda n=node: _node_status(kube, n.name))))
    if kube is not None and NAMESPACE_STASH in item.stash:
        namespace = item.stash[NAMESPACE_STASH]
        sections.append((f"events in namespace {namespace}", _safe(lambda: "\n".join(pods.events(kube, namespace)))))
    for title, producer in item.stash.get(EXTRA_REPORTS, []):
        sections.append((title, _safe(producer)))
    return sections


def _node_status(kube: Kube, name: str) -> str:
    node = kube.core.read_node(name)
    status = node.status
    lines = ["conditions: " + ", ".join(f"{c.type}={c.status}" for c in status.conditions or [])]
    lines.append(f"capacity: {status.capacity}")
    lines.append(f"allocatable: {status.allocatable}")
    return "\n".join(lines)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Generator[None, None, None]:
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when in ("call", "setup"):
        target = Path(item.config.rootpath) / "artifacts" / item.nodeid.replace("/", "_").replace("::", "__")
        for title, text in _sections(item):
            report.sections.append((title, text))
            target.mkdir(parents=True, exist_ok=True)
            (target / (re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:60] + ".txt")).write_text(text)
        handle = getattr(item, "funcargs", {}).get("cluster")
        if handle is not None:
            # The provider's own collection (kind: `kind export logs`; local: the components' logs).
            problem = _safe(lambda: handle.collect_logs(target / "cluster-logs") or "")
            if problem:
                report.sections.append(("cluster logs", problem))
