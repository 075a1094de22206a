"""wait.kube.node_ready_in_a_later_status (what KubeletControl.restart waits on through its node_ready seam) and
kube.nodes.ready_condition against a fake API: Ready counts only in a status posted after the one noted, judged by
the node's own lastHeartbeatTime against the heartbeat noted, never by this machine's clock."""

from __future__ import annotations

import datetime

from kubernetes import client

from device_conformance.kube import nodes
from device_conformance.wait.kube import node_ready_in_a_later_status

NOTED = datetime.datetime(2026, 11, 28, 2, 50, 1, tzinfo=datetime.UTC)
LATER = NOTED + datetime.timedelta(seconds=3)


class NodesAnswering:
    """kube.core.read_node answers each of `answers` in turn, then the last one again."""

    def __init__(self, *answers: client.V1Node) -> None:
        self.answers = list(answers)
        self.core = self

    def read_node(self, name: str) -> client.V1Node:
        assert name == "node-a"
        return self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]


def node(status: str | None, heartbeat: datetime.datetime | None = NOTED, reason: str = "", message: str = ""):
    """A node whose Ready condition has `status` (None: it has no Ready condition) and `heartbeat`."""
    conditions = [client.V1NodeCondition(type="MemoryPressure", status="False", last_heartbeat_time=LATER)]
    if status is not None:
        reason = reason or ("KubeletReady" if status == "True" else "KubeletNotReady")
        ready = client.V1NodeCondition(
            type="Ready", status=status, reason=reason, message=message, last_heartbeat_time=heartbeat
        )
        conditions.append(ready)
    return client.V1Node(metadata=client.V1ObjectMeta(name="node-a"), status=client.V1NodeStatus(conditions=conditions))


def test_ready_condition_is_the_ready_one_or_none():
    assert nodes.ready_condition(NodesAnswering(node("True")), "node-a").reason == "KubeletReady"
    assert nodes.ready_condition(NodesAnswering(node(None)), "node-a") is None
    bare = client.V1Node(metadata=client.V1ObjectMeta(name="node-a"))
    assert nodes.ready_condition(NodesAnswering(bare), "node-a") is None


def test_the_status_noted_does_not_count_though_it_says_ready():
    check = node_ready_in_a_later_status(NodesAnswering(node("True", NOTED)), "node-a")
    seen = check()
    assert seen == (
        "Ready=True (KubeletReady) with lastHeartbeatTime 2026-11-28T02:50:01+00:00: no status posted since the one "
        "noted before (lastHeartbeatTime 2026-11-28T02:50:01+00:00)"
    )


def test_a_later_status_that_says_ready_holds():
    check = node_ready_in_a_later_status(NodesAnswering(node("True", NOTED), node("True", LATER)), "node-a")
    assert check() is None


def test_a_later_status_that_says_not_ready_does_not_hold_and_says_why():
    fresh = node("False", LATER, message="container runtime status check may not have completed yet")
    check = node_ready_in_a_later_status(NodesAnswering(node("True", NOTED), fresh), "node-a")
    assert check() == (
        "Ready=False (KubeletNotReady) with lastHeartbeatTime 2026-11-28T02:50:04+00:00: container runtime status "
        "check may not have completed yet"
    )


def test_an_older_heartbeat_does_not_count():
    # Only the node's clock orders heartbeats: one before the noted one is not a later status.
    earlier = NOTED - datetime.timedelta(seconds=3)
    check = node_ready_in_a_later_status(NodesAnswering(node("True", NOTED), node("True", earlier)), "node-a")
    assert "no status posted since the one noted before" in check()


def test_a_node_without_ready_when_noted_counts_its_first_ready_status():
    check = node_ready_in_a_later_status(NodesAnswering(node(None), node(None), node("True", NOTED)), "node-a")
    assert check() == "node node-a has no Ready condition"
    assert check() is None


def test_the_controllers_unknown_keeps_the_old_heartbeat_and_does_not_count():
    # The node lifecycle controller marks Ready Unknown after node-monitor-grace-period, keeping lastHeartbeatTime.
    unknown = node("Unknown", NOTED, reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
    check = node_ready_in_a_later_status(NodesAnswering(node("True", NOTED), unknown), "node-a")
    assert "Ready=Unknown (NodeStatusUnknown)" in check()
