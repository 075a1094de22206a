"""Which DRAResourceHealth version a kubelet opens a driver's stream on (expectations/dra.py HEALTH_API_PREFERENCE),
across the releases around each change: kubernetes#130606 (v1alpha1, 1.34.0-rc.0) and #139477 (v1 first,
1.37.0-rc.0)."""

from __future__ import annotations

import pytest

from device_conformance.expectations.dra import health_api_opened
from device_conformance.expectations.versions import KubeVersion

BOTH = ["v1", "v1alpha1"]


@pytest.mark.parametrize(
    ("version", "served", "opened"),
    [
        ("1.33.13", BOTH, None),
        ("1.34.0-beta.0", BOTH, None),
        ("1.34.0-rc.0", BOTH, "v1alpha1"),
        ("1.36.5", BOTH, "v1alpha1"),
        ("1.36.5", ["v1alpha1"], "v1alpha1"),
        ("1.36.5", ["v1"], None),
        ("1.37.0-beta.0", BOTH, "v1alpha1"),
        ("1.37.0-rc.0", BOTH, "v1"),
        ("1.37.2", BOTH, "v1"),
        ("1.37.2", ["v1alpha1"], "v1alpha1"),
        ("1.37.2", ["v1"], "v1"),
        ("1.38.0-beta.0", ["v1alpha1", "v1"], "v1"),
        ("1.37.2", [], None),
    ],
)
def test_the_kubelet_opens_the_first_version_it_prefers_that_the_driver_serves(version, served, opened):
    assert health_api_opened(KubeVersion.parse(version), served) == opened
