"""certify/node_selector.py: a NodeSelector decides as the scheduler's (k8s.io/component-helpers/scheduling/corev1/
nodeaffinity nodeaffinity.go; label operators as k8s.io/apimachinery/pkg/labels selector.go)."""

from __future__ import annotations

import pytest

from device_conformance.certify.node_selector import matches, node_names

LABELS = {"pool": "a", "gpus": "4", "kubernetes.io/hostname": "node-1"}


def term(*expressions, fields=()):
    return {"nodeSelectorTerms": [{"matchExpressions": list(expressions), "matchFields": list(fields)}]}


def req(key, operator, *values):
    return {"key": key, "operator": operator, "values": list(values)}


@pytest.mark.parametrize(
    "selector,selected",
    [
        (term(req("pool", "In", "a", "b")), True),
        (term(req("pool", "In", "b")), False),
        (term(req("pool", "NotIn", "b")), True),
        (term(req("zone", "NotIn", "b")), True),  # NotIn holds without the label
        (term(req("pool", "Exists")), True),
        (term(req("zone", "Exists")), False),
        (term(req("zone", "DoesNotExist")), True),
        (term(req("gpus", "Gt", "3")), True),
        (term(req("gpus", "Lt", "4")), False),
        (term(req("pool", "Gt", "3")), False),  # not an integer: no match
        (term(req("pool", "In", "a"), req("gpus", "Gt", "8")), False),  # ANDed within a term
        (term(fields=[req("metadata.name", "In", "node-1")]), True),
        (term(fields=[req("metadata.name", "NotIn", "node-1")]), False),
        (term(fields=[req("metadata.uid", "In", "node-1")]), False),
        ({"nodeSelectorTerms": [{}, {"matchExpressions": [req("pool", "In", "a")]}]}, True),  # ORed; empty: nothing
        ({"nodeSelectorTerms": [{}]}, False),
        ({"nodeSelectorTerms": []}, False),
        (None, False),
    ],
)
def test_a_selector_selects_as_the_scheduler_does(selector, selected):
    assert matches(selector, "node-1", LABELS) is selected


def test_node_names_only_for_selectors_naming_nodes():
    on_node = term(fields=[req("metadata.name", "In", "node-1")])
    assert node_names(on_node) == ["node-1"]
    assert node_names(term(req("pool", "In", "a"))) is None
    assert node_names(term(req("pool", "In", "a"), fields=[req("metadata.name", "In", "node-1")])) is None
    assert node_names(None) is None
