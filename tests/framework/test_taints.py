"""framework/taints.py: the toleration, taint and rule helpers the taint suites share, without a cluster."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest
from kubernetes import client

from device_conformance.core import timeouts
from device_conformance.framework import taints


def test_a_toleration_lasts_for_good_unless_given_seconds():
    assert taints.toleration("example.com/broken") == {
        "key": "example.com/broken",
        "operator": "Exists",
        "effect": "NoExecute",
    }
    assert taints.toleration("k", "NoSchedule") == {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
    assert taints.toleration("k", seconds=0)["tolerationSeconds"] == 0  # zero is a value, not "for good"
    assert taints.toleration("k", "NoExecute", 8)["tolerationSeconds"] == 8


def test_a_taint_says_when_it_was_added_in_whole_seconds_only_when_told():
    assert taints.taint("k") == {"key": "k", "effect": "NoExecute"}
    assert taints.taint("k", "None") == {"key": "k", "effect": "None"}
    added = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    expected = {"key": "k", "effect": "NoExecute", "timeAdded": "2026-01-02T03:04:05Z"}
    assert taints.taint("k", time_added=added) == expected


def test_an_api_timestamp_parses_as_an_aware_time_and_round_trips_a_taints_time_added():
    parsed = taints.parse_time("2026-01-02T03:04:05Z")
    assert parsed == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert taints.parse_time(taints.taint("k", time_added=parsed)["timeAdded"]) == parsed


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ({}, {}),
        ({"status": None}, {}),
        ({"status": {"conditions": None}}, {}),
        ({"status": {"conditions": [{"type": "Other", "reason": "x"}]}}, {}),
        (
            {"status": {"conditions": [{"type": "Other"}, {"type": "EvictionInProgress", "reason": "Completed"}]}},
            {"type": "EvictionInProgress", "reason": "Completed"},
        ),
    ],
)
def test_eviction_in_progress_is_the_rules_condition_or_empty(rule, expected):
    assert taints.eviction_in_progress(rule) == expected


def test_setting_a_rules_effect_patches_the_effect_alone_in_the_rules_api_version():
    calls = []
    kube = SimpleNamespace(custom=SimpleNamespace(patch_cluster_custom_object=lambda *args: calls.append(args)))
    objects = SimpleNamespace(rule_api="resource.k8s.io/v1alpha3")
    assert taints.set_rule_effect(kube, objects, "rule-1", "NoExecute") is None
    assert calls == [
        ("resource.k8s.io", "v1alpha3", "devicetaintrules", "rule-1", {"spec": {"taint": {"effect": "NoExecute"}}})
    ]


class Pod:
    """A PodHandle stand-in whose read() answers the pod as it is now."""

    def __init__(self, deleted: bool):
        self.deleted = deleted

    def read(self) -> client.V1Pod:
        stamp = datetime(2026, 1, 1, tzinfo=UTC) if self.deleted else None
        return client.V1Pod(
            metadata=client.V1ObjectMeta(name="p", namespace="ns", deletion_timestamp=stamp),
            status=client.V1PodStatus(phase="Running", conditions=[]),
        )

    def __str__(self) -> str:
        return "pod ns/p"


def test_the_no_eviction_window_holds_for_a_pod_left_alone_and_fails_naming_the_deletion(monkeypatch):
    monkeypatch.setattr(timeouts, "TAINT_NO_EVICTION_WINDOW", 0.3)
    taints.not_evicted(Pod(deleted=False), "not to be evicted").holds()
    with pytest.raises(AssertionError, match=r"pod ns/p not to be evicted.*pod deleted: phase=Running"):
        taints.not_evicted(Pod(deleted=True), "not to be evicted").holds()
