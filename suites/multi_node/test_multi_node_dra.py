"""DRA across nodes: the scheduler allocates a claim on the node whose ResourceSlice has the device asked for,
and a shared claim's consumers on one node are untouched while the same driver restarts on another node.

One fake driver name serves every node (`dra_driver(on=node, driver_name=...)`): a ResourceSlice per node, its
pool named like the node (as the kubeletplugin helper names node-local pools).
"""

import pytest
from device_conformance.fixtures.dra_drivers import unique_driver
from device_conformance.fixtures.nodes import on_node

from device_conformance.framework import PREPARE, SINCE_DRA, UNPREPARE, DeviceSpec, claim_record, dra, stays, timeouts

pytestmark = [pytest.mark.dra, pytest.mark.nodes(2), SINCE_DRA]

DEVICE = "dev-0"


def allocation_of(claim):
    """(status.allocation.nodeSelector, (driver, pool, device) of each result) of a ResourceClaim."""
    allocation = (claim.get("status") or {}).get("allocation") or {}
    results = (allocation.get("devices") or {}).get("results") or []
    return allocation.get("nodeSelector"), [(r["driver"], r["pool"], r["device"]) for r in results]


@pytest.mark.parametrize("target", [0, 1], ids=["first-node", "second-node"])
def test_scheduler_allocates_on_the_node_whose_slice_has_the_device(target, cluster_nodes, dra_driver, dra_objects):
    """Every node has a `dev-0` of the driver; only the target's is "big", and the claim asks for a big one.
    The pod tolerates every node's taints and names no node: where it runs is the allocation's choice."""
    driver = unique_driver()
    home = cluster_nodes.nodes[target]
    drivers = {}
    for node in cluster_nodes.nodes:
        size = "big" if node is home else "small"
        drivers[node.name] = dra_driver((DeviceSpec(DEVICE, attributes={"size": size}),), on=node, driver_name=driver)
    pod = dra_objects.claim_pod(
        "placed",
        driver,
        request={"selectors": [f'device.attributes["{driver}"].size == "big"']},
        **cluster_nodes.pod_options(),
    )
    running = pod.wait_running()
    uid = pod.claim_uid()
    assert allocation_of(pod.claim()) == (
        on_node(home.name)["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"],
        [(driver, home.name, DEVICE)],
    ), f"claim of {pod}: {dra.claim_summary(pod.claim())}"
    assert running.spec.node_name == home.name, f"{pod} runs on {running.spec.node_name}, the claim is on {home.name}"
    calls = {name: claim_record(d.calls(PREPARE)) for name, d in drivers.items()}
    expected = {name: [([uid], "ok")] if name == home.name else [] for name in drivers}
    assert calls == expected, "NodePrepareResources per node's driver"


def consumers_state(pods_, claim_name, dra_objects, home_driver, home_slice, away_drivers):
    """What must not change while another node's driver restarts (compared whole)."""
    claim = dra_objects.get_claim(claim_name)
    return {
        "consumers": [
            (p.uid, r.spec.node_name, r.status.phase, [c.restart_count for c in r.status.container_statuses or []])
            for p, r in ((p, p.read()) for p in pods_)
        ],
        "reservedFor": sorted(e["uid"] for e in (claim.get("status") or {}).get("reservedFor") or []),
        "allocation": allocation_of(claim),
        "home driver calls": (claim_record(home_driver.calls(PREPARE)), claim_record(home_driver.calls(UNPREPARE))),
        "home slice": home_slice(),
        "other nodes' driver calls": [
            (claim_record(d.calls(PREPARE)), claim_record(d.calls(UNPREPARE))) for d in away_drivers
        ],
    }


def test_shared_claim_on_one_node_is_untouched_while_another_nodes_driver_restarts(
    kube, resource_api, cluster_nodes, dra_driver, dra_objects
):
    driver = unique_driver()
    home = cluster_nodes.nodes[0]
    away = cluster_nodes.others(home.name)
    home_driver = dra_driver((DEVICE,), on=home, driver_name=driver)
    away_drivers = [dra_driver((DEVICE,), on=node, driver_name=driver) for node in away]
    claim = dra_objects.claim(driver)
    consumers = []
    for _ in range(2):  # one after the other: the second finds the claim prepared on the node
        consumer = dra_objects.claim_pod("consumer", claim=claim, **cluster_nodes.pod_options(on=home.name))
        consumer.wait_running()
        consumers.append(consumer)
    uid = consumers[0].claim_uid()

    def home_slice():
        items = dra.list_slices(kube, resource_api, node=home.name, driver=driver)
        return [(i["metadata"]["uid"], i["metadata"]["resourceVersion"]) for i in items]

    before = consumers_state(consumers, claim, dra_objects, home_driver, home_slice, away_drivers)
    assert before["allocation"][1] == [(driver, home.name, DEVICE)], f"shared claim allocated {before['allocation']}"
    assert before["reservedFor"] == sorted(c.uid for c in consumers), f"reservedFor {before['reservedFor']}"
    assert before["home driver calls"] == ([([uid], "ok")], []), "one NodePrepareResources on the consumers' node"
    assert before["other nodes' driver calls"] == [([], [])] * len(away), "no claim call on the other nodes"
    assert len(before["home slice"]) == 1, f"slices of {driver} on {home.name}: {before['home slice']}"

    for away_driver in away_drivers:
        away_driver.restart(kill=True)
        away_driver.wait_for_registration(count=2, timeout=timeouts.DRA_REGISTRATION)

    def changed():
        now = consumers_state(consumers, claim, dra_objects, home_driver, home_slice, away_drivers)
        diff = {k: (before[k], now[k]) for k in before if before[k] != now[k]}
        return None if not diff else f"changed (before, now): {diff}"

    # Past the kubelet's wiping delay on the restarted node: a kubelet that wiped every slice of the driver, not
    # only its own node's, would show it here (pkg/kubelet/cm/dra/plugin defaultWipingDelay).
    stays(
        changed,
        what="the consumers, their claim and their node's driver to stay as they were",
        duration=timeouts.DRA_WIPING_DELAY + 5,
    )
