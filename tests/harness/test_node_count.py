"""Multi-node tests' harness (fixtures/nodes.py): the nodes(N) marker skips on fewer nodes, naming the count and
the fix; tolerations, node affinity and node lookup of ClusterNodes. No cluster: a conftest stands in a
ClusterHandle with named stand-in nodes."""

from types import SimpleNamespace

import pytest
from device_conformance.fixtures.nodes import ClusterNodes, cluster_nodes_of, needed_nodes, on_node, tolerations_for

from device_conformance.errors import BadInput
from device_conformance.kube import pods
from device_conformance.providers.base import ClusterHandle

pytest_plugins = ["pytester"]


def run(pytester, node_names, source):
    pytester.makeconftest(
        f"""
import pytest
from pathlib import Path
from types import SimpleNamespace
from device_conformance.expectations.versions import KubeVersion
from device_conformance.providers.base import ClusterHandle

@pytest.fixture(scope="session")
def cluster():
    nodes = [SimpleNamespace(name=n) for n in {node_names!r}]
    return ClusterHandle("c1", "kind", Path("/nonexistent"), KubeVersion.parse("1.37.1"), nodes=nodes)
"""
    )
    pytester.makepyfile(test_nodes=source)
    return pytester.runpytest("--strict-markers", "-p", "no:cacheprovider", "-rs")


NEEDS_TWO = """
import pytest

@pytest.mark.nodes(2)
def test_two():
    pass

def test_any():
    pass
"""


def test_nodes_marker_skips_a_single_node_cluster_naming_count_nodes_and_fix(pytester):
    result = run(pytester, ["c1-control-plane"], NEEDS_TWO)
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "SKIPPED * needs 2 nodes with node access; kind cluster c1 gives 1 (c1-control-plane): "
            "run with --provider kind --kind-profile two-nodes*"
        ]
    )


def test_nodes_marker_runs_with_enough_nodes(pytester):
    run(pytester, ["c1-worker", "c1-control-plane"], NEEDS_TWO).assert_outcomes(passed=2)


def test_nodes_marker_counts_from_the_closest_mark(pytester):
    source = "import pytest\npytestmark = pytest.mark.nodes(3)\n\n@pytest.mark.nodes(2)\ndef test_two():\n    pass\n"
    run(pytester, ["a", "b"], source).assert_outcomes(passed=1)
    run(pytester, ["a"], source).assert_outcomes(skipped=1)


def test_malformed_nodes_marker_fails_the_test_naming_the_fix(pytester):
    result = run(pytester, ["a", "b"], "import pytest\n\n@pytest.mark.nodes(1)\ndef test_one():\n    pass\n")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*marker nodes(1): the count must be an int of at least 2*"])


@pytest.mark.parametrize("args", [(), (2, 3), ("2",), (True,)])
def test_needed_nodes_rejects_what_is_not_one_int_of_at_least_two(args):
    with pytest.raises(BadInput):
        needed_nodes([pytest.mark.nodes(*args).mark])


def test_needed_nodes_ignores_other_marks_and_takes_the_first_nodes_mark():
    marks = [pytest.mark.dra.mark, pytest.mark.nodes(3).mark, pytest.mark.nodes(2).mark]
    assert needed_nodes(marks) == 3
    assert needed_nodes([pytest.mark.dra.mark]) is None


def test_tolerations_cover_each_noschedule_taint_once_and_never_noexecute():
    taints = [
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule", "value": ""},
        {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute", "value": ""},
        {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule", "value": ""},
        {"key": "example.com/soft", "effect": "PreferNoSchedule", "value": ""},
    ]
    assert tolerations_for(taints) == [
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
    ]


def two_nodes():
    nodes = [SimpleNamespace(name="c1-worker"), SimpleNamespace(name="c1-control-plane")]
    cluster = ClusterHandle("c1", "kind", "/nonexistent", None, nodes=nodes)  # type: ignore[arg-type]
    taints = {"c1-control-plane": [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]}
    return nodes, cluster_nodes_of(cluster, taints)


def test_cluster_nodes_finds_nodes_by_name_and_the_others():
    nodes, found = two_nodes()
    assert found.names == ["c1-worker", "c1-control-plane"]
    assert found.named("c1-control-plane") is nodes[1]
    assert found.others("c1-worker") == (nodes[1],)
    with pytest.raises(BadInput, match=r"(?s)no node named 'c1-worker2'.*\['c1-worker', 'c1-control-plane'\]"):
        found.others("c1-worker2")


def test_pod_options_tolerate_every_node_and_pin_one_by_metadata_name():
    _, found = two_nodes()
    toleration = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
    assert found.pod_options() == {"tolerations": [toleration]}
    pinned = found.pod_options(on="c1-control-plane")
    assert pinned["affinity"] == {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["c1-control-plane"]}]}
                ]
            }
        }
    }
    with pytest.raises(BadInput):
        found.pod_options(on="elsewhere")
    spec = pods.pod_manifest("p", ["true"], **pinned)["spec"]
    assert (spec["tolerations"], spec["affinity"]) == ([toleration], on_node("c1-control-plane"))
    assert "tolerations" not in pods.pod_manifest("p", ["true"])["spec"]


def test_cluster_nodes_without_taints_need_no_tolerations():
    assert ClusterNodes(()).pod_options() == {"tolerations": []}
