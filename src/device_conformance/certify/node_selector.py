"""Whether a core/v1 NodeSelector (as JSON) selects a node, as the scheduler decides it: the nodeSelector of a
ResourceSlice or of a device in one (resource.k8s.io ResourceSliceSpec.NodeSelector, Device.NodeSelector) and of
an allocation (AllocationResult.NodeSelector).

The rules of k8s.io/component-helpers/scheduling/corev1/nodeaffinity/nodeaffinity.go (NewLazyErrorNodeSelector,
nodeSelectorTerm.match): the terms are ORed; within a term matchExpressions (on labels) and matchFields (only
metadata.name) are ANDed; a term with neither matches nothing; an invalid requirement makes its term match
nothing. Label operators as k8s.io/apimachinery/pkg/labels (selector.go Requirement.Matches): In, NotIn (also
true without the label), Exists, DoesNotExist, Gt and Lt (the label's value and the single value as integers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def matches(selector: Mapping[str, Any] | None, node_name: str, labels: Mapping[str, str]) -> bool:
    """Whether `selector` (a NodeSelector: {"nodeSelectorTerms": [...]}) selects the node."""
    terms = (selector or {}).get("nodeSelectorTerms") or []
    return any(_term(term, node_name, labels) for term in terms)


def node_names(selector: Mapping[str, Any] | None) -> list[str] | None:
    """The node names a selector pins to when every term is only `metadata.name In [...]` (as the scheduler writes
    it for node-local devices), else None."""
    terms = (selector or {}).get("nodeSelectorTerms") or []
    names: list[str] = []
    for term in terms:
        fields = term.get("matchFields") or []
        if term.get("matchExpressions") or not fields:
            return None
        for field in fields:
            if field.get("key") != "metadata.name" or field.get("operator") != "In":
                return None
            names += [str(v) for v in field.get("values") or []]
    return names or None


def _term(term: Mapping[str, Any], node_name: str, labels: Mapping[str, str]) -> bool:
    expressions, fields = term.get("matchExpressions") or [], term.get("matchFields") or []
    if not expressions and not fields:
        return False
    return all(_label(e, labels) for e in expressions) and all(_field(f, node_name) for f in fields)


def _label(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key, operator = requirement.get("key"), requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    has = key in labels
    if operator == "In":
        return has and labels[key] in values
    if operator == "NotIn":
        return not has or labels[key] not in values
    if operator == "Exists":
        return has
    if operator == "DoesNotExist":
        return not has
    if operator in ("Gt", "Lt") and has and len(values) == 1:
        try:
            value, bound = int(labels[key]), int(values[0])
        except ValueError:
            return False
        return value > bound if operator == "Gt" else value < bound
    return False


def _field(requirement: Mapping[str, Any], node_name: str) -> bool:
    # nodeaffinity.go nodeSelectorRequirementsAsFieldSelector: metadata.name only, In or NotIn.
    if requirement.get("key") != "metadata.name":
        return False
    values = [str(v) for v in requirement.get("values") or []]
    if requirement.get("operator") == "In":
        return node_name in values
    if requirement.get("operator") == "NotIn":
        return node_name not in values
    return False
