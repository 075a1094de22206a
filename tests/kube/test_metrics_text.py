"""The Prometheus text the kubelet serves, parsed by kube/metrics.py (no cluster)."""

import pytest

from device_conformance.core.errors import BadInput
from device_conformance.kube.metrics import Sample, by_label, kubelet_metrics, parse

TEXT = """# HELP dra_resource_claims_in_use [ALPHA] The number of ResourceClaims that are currently in use
# TYPE dra_resource_claims_in_use gauge
dra_resource_claims_in_use{driver_name="<any>"} 2
dra_resource_claims_in_use{driver_name="dc-1.example.com"} 2
dra_resource_claims_in_use{driver_name="dc-2.example.com"} 1
# TYPE dra_operations_duration_seconds histogram
dra_operations_duration_seconds_bucket{is_error="false",le="0.1",operation_name="PrepareResources"} 3
dra_operations_duration_seconds_count{is_error="false",operation_name="PrepareResources"} 3
escaped{path="a\\"b\\\\c"} 1.5e+00 1700000000000
"""


def test_by_label_keys_a_gauge_vector_by_its_label():
    assert by_label(parse(TEXT), "dra_resource_claims_in_use", "driver_name") == {
        "<any>": 2.0,
        "dc-1.example.com": 2.0,
        "dc-2.example.com": 1.0,
    }


def test_samples_keep_names_labels_and_values():
    found = parse(TEXT)
    assert [s for s in found if s.name.startswith("dra_operations")] == [
        Sample(
            "dra_operations_duration_seconds_bucket",
            {"is_error": "false", "le": "0.1", "operation_name": "PrepareResources"},
            3.0,
        ),
        Sample(
            "dra_operations_duration_seconds_count", {"is_error": "false", "operation_name": "PrepareResources"}, 3.0
        ),
    ]
    assert [s for s in found if s.name == "escaped"] == [Sample("escaped", {"path": 'a"b\\c'}, 1.5)]


def test_a_sample_without_the_label_is_refused():
    with pytest.raises(BadInput, match="without label 'driver_name'"):
        by_label([Sample("m", {}, 1.0)], "m", "driver_name")


def test_kubelet_metrics_reads_the_reply_unparsed_through_the_node_proxy():
    class Reply:
        data = TEXT.encode()

    class Core:
        def connect_get_node_proxy_with_path(self, name, path, **options):
            self.asked = (name, path, options)
            return Reply()

    class Kube:
        core = Core()

    assert kubelet_metrics(Kube(), "node-1") == TEXT
    assert Kube.core.asked == ("node-1", "metrics", {"_preload_content": False, "_request_timeout": 15})
