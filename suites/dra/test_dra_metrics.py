"""The kubelet's DRA metrics: `dra_resource_claims_in_use`, a gauge vector of the claims the kubelet holds
prepared, per driver (label driver_name) and across drivers (driver_name="<any>") (pkg/kubelet/metrics/
metrics.go and pkg/kubelet/cm/dra/claiminfo.go `claimsInUse`, module source v1.37.1; upstream
test/e2e_node/dra_test.go "must provide metrics"). A driver with no prepared claim is not listed at all.
"""

import pytest
from device_conformance.fixtures.dra_pods import claim_with_requests, claims_pod

from device_conformance.framework import (
    FIRST_CLAIMS_IN_USE_METRIC_MINOR,
    PREPARE,
    UNPREPARE,
    claim_record,
    metrics,
    timeouts,
)

pytestmark = [
    pytest.mark.dra,
    pytest.mark.since(f"1.{FIRST_CLAIMS_IN_USE_METRIC_MINOR}", "dra_resource_claims_in_use (kubernetes#131641)"),
]

METRIC = "dra_resource_claims_in_use"


def assert_claims_in_use(kube, node, expected, when):
    """The gauge's samples are exactly `expected`; the failure shows the kubelet's own lines for it."""
    text = metrics.kubelet_metrics(kube, node.name)
    seen = metrics.by_label(metrics.parse(text), METRIC, "driver_name")
    lines = [line for line in text.splitlines() if METRIC in line] or [
        f"no {METRIC} in {len(text)} chars: {text[:300]!r}"
    ]
    assert seen == expected, f"{METRIC} {when}: {seen}, expected {expected}; the kubelet served: {lines}"


@pytest.mark.scenario("DRA-T2")
def test_claims_in_use_counts_prepared_claims_per_driver_and_in_all(kube, node, dra_driver, dra_objects):
    """Two drivers; a claim spanning both (one pod) and a claim of the first only (another pod): while both
    run, the first driver has 2 claims in use, the second 1, and <any> 2 (the spanning claim counts once).
    Each pod's deletion takes its claims out of the metric, down to <any> 0 and no driver listed."""
    a = dra_driver(devices=("a-0", "a-1"))
    b = dra_driver(devices=("b-0",))
    a_name, b_name = a.config.driver_name, b.config.driver_name
    pair = claim_with_requests(dra_objects, {"first": a_name, "second": b_name})
    solo = claim_with_requests(dra_objects, {"only": a_name})
    both = claims_pod(dra_objects, "pair", {"pair": pair}, {"main": ["pair"]}, command=["sleep", "86400"])
    one = claims_pod(dra_objects, "solo", {"solo": solo}, {"main": ["solo"]}, command=["sleep", "86400"])
    for pod in (both, one):
        pod.wait_running(timeout=timeouts.CLAIM_POD_START)
    pair_uid, solo_uid = (dra_objects.get_claim(c)["metadata"]["uid"] for c in (pair, solo))
    assert sorted(claim_record(a.calls(PREPARE))) == sorted([([pair_uid], "ok"), ([solo_uid], "ok")])
    assert claim_record(b.calls(PREPARE)) == [([pair_uid], "ok")]
    assert_claims_in_use(kube, node, {"<any>": 2, a_name: 2, b_name: 1}, "while both pods run")

    both.delete()
    both.wait_gone(timeout=timeouts.UNPREPARE)
    assert claim_record(b.calls(UNPREPARE)) == [([pair_uid], "ok")]
    assert_claims_in_use(kube, node, {"<any>": 1, a_name: 1}, "after the pod of the spanning claim went")

    one.delete()
    one.wait_gone(timeout=timeouts.UNPREPARE)
    assert_claims_in_use(kube, node, {"<any>": 0}, "after both pods went")
