"""Smoke: the kubelet runs with what the session asked of it (--kubelet-verbosity, --feature-gates kubelet:...,
--kubelet-config), read from the kubelet itself: its /configz (the configuration it runs with, flags merged in:
pkg/kubelet/server/server.go, InstallDebuggingHandlers) and its /metrics `kubernetes_feature_enabled` (every gate
it knows, k8s.io/component-base/metrics/prometheus/feature). The knobs are session-wide, so these tests take their
expectation from the session's settings: run them with the knobs set to see those reach the kubelet, e.g.

    pytest suites/smoke/test_knobs.py --kubelet-verbosity 4 --feature-gates kubelet:ResourceHealthStatus=false
"""

import json
import time

import pytest

from device_conformance.kube.metrics import parse

pytestmark = [pytest.mark.smoke]

# The kubelet's pod housekeeping runs every 2 s and logs "SyncLoop (housekeeping)" at V(4)
# (pkg/kubelet/kubelet.go, housekeepingPeriod and syncLoopIteration).
HOUSEKEEPING_PERIOD = 2.0
V4_LINE = "SyncLoop (housekeeping)"


@pytest.fixture
def knobs(cluster, session_plan):
    if not cluster.capabilities.brings_up_clusters:
        pytest.skip(f"provider {cluster.provider}: the suite starts no component, so no knob applies")
    return session_plan.settings.component_knobs()


def kubelet_configz(kube, node_name):
    reply = kube.core.connect_get_node_proxy_with_path(
        node_name, "configz", _preload_content=False, _request_timeout=15
    )
    return json.loads(reply.data.decode("utf-8"))["kubeletconfig"]


def test_kubelet_runs_with_the_sessions_verbosity_gates_and_fields(kube, node, knobs):
    config = kubelet_configz(kube, node.name)
    assert config["logging"]["verbosity"] == knobs.kubelet_verbosity
    gates = knobs.user_gates("kubelet")
    assert {name: (config.get("featureGates") or {}).get(name) for name in gates} == gates
    enabled = {
        s.labels["name"]: s.value == 1
        for s in parse(
            kube.core.connect_get_node_proxy_with_path(node.name, "metrics", _preload_content=False).data.decode()
        )
        if s.name == "kubernetes_feature_enabled"
    }
    assert {name: enabled.get(name) for name in gates} == gates
    for key, value in knobs.kubelet_config.items():
        assert config[key] == (value if not isinstance(value, dict) else {**config[key], **value}), key


def test_kubelet_logs_v4_lines_exactly_when_the_session_asks_for_them(node, knobs):
    """A V(4) line of the kubelet's housekeeping appears in its log within three periods at verbosity 4 or
    more, and never below."""
    mark = node.kubelet.log_mark()
    time.sleep(3 * HOUSEKEEPING_PERIOD)
    logged = V4_LINE in node.kubelet.log_since(mark)
    assert logged == (knobs.kubelet_verbosity >= 4), (
        f"kubelet --v={knobs.kubelet_verbosity}: {V4_LINE!r} {'logged' if logged else 'not logged'}"
    )
