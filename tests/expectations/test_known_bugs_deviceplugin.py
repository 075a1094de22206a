"""Verdicts of the device plugin manager's and podresources' known bugs added with the bug catalogue, on every
minor the suites run against (1.28-1.37) and on both sides of each fix and cherry-pick. The expected values
restate the release numbers the comments in src/device_conformance/expectations/deviceplugin.py cite."""

import pytest

from device_conformance.expectations import bugtable, deviceplugin
from device_conformance.expectations.behaviour import KUBELET
from device_conformance.expectations.versions import MATRIX_VERSIONS, KubeVersion

V = KubeVersion.parse

# (bug, release, affected): every minor 1.28-1.37, the first affected release and both sides of each fix.
VERDICTS = [
    *[
        (deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS, release, affected)
        for release, affected in [
            ("1.19.16", False),  # before the v1 List this entry vouches for
            ("1.20.0", True),
            ("1.28.15", True),
            ("1.29.0", True),
            ("1.30.14", True),
            ("1.31.0", True),
            ("1.31.4", True),  # module source: GetPods()
            ("1.32.5", True),  # module source: GetPods()
            ("1.33.13", True),  # the newest 1.33: no cherry-pick
            ("1.34.0", False),
            ("1.34.10", False),
            ("1.35.8", False),
            ("1.36.4", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART, release, affected)
        for release, affected in [
            ("1.27.16", False),  # the 1.27 cherry-pick of #118635 is outside what this entry vouches for
            ("1.28.0", True),
            ("1.29.15", True),
            ("1.30.14", True),
            ("1.31.0", True),
            ("1.32.5", True),
            ("1.33.13", True),  # the 1.33 cherry-pick (#138025) was closed unmerged
            ("1.34.0", True),
            ("1.34.3", True),
            ("1.34.6", True),
            ("1.34.7", False),  # #138027
            ("1.34.10", False),
            ("1.35.0", True),
            ("1.35.3", True),
            ("1.35.4", False),  # #138042
            ("1.35.8", False),
            ("1.36.0", False),  # #135485
            ("1.36.4", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD, release, affected)
        for release, affected in [
            ("1.26.15", False),  # no Get before 1.27
            ("1.27.0", True),
            ("1.33.13", True),
            ("1.34.3", True),
            ("1.34.6", True),
            ("1.34.7", False),
            ("1.35.3", True),
            ("1.35.4", False),
            ("1.36.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.RESIZE_RUNS_DEVICE_ALLOCATION, release, affected)
        for release, affected in [
            ("1.32.13", False),  # resize off by default; not what this entry vouches for
            ("1.33.0", True),
            ("1.33.13", True),
            ("1.34.10", True),
            ("1.35.8", True),
            ("1.36.4", True),
            ("1.36.5", True),  # no cherry-pick
            ("1.37.0", False),
            ("1.37.1", False),
        ]
    ],
    *[
        (deviceplugin.COMPLETED_INIT_CONTAINER_READMITTED_ON_KUBELET_RESTART, release, affected)
        for release, affected in [
            ("1.27.16", False),  # before #116376 and #118635 met: any running container was re-admitted (#118559)
            ("1.28.0", True),
            ("1.28.15", True),  # module source: the early return for running containers only
            ("1.34.10", True),  # module source, with #135485's cherry-pick
            ("1.37.1", True),  # module source
            ("1.37.2", True),
        ]
    ],
]


@pytest.mark.parametrize(("bug", "release", "affected"), VERDICTS, ids=lambda v: str(getattr(v, "issue", v)))
def test_known_bug_verdict(bug, release, affected):
    assert bug.affects(V(release)) is affected


# The matrix releases 1.31.4, 1.32.9, 1.33.13, 1.34.12, 1.35.8, 1.36.5, 1.37.2, written out by hand (no cell
# changed from 1.32.5, 1.34.10, 1.36.4, 1.37.1: no fix of these bugs lies between them).
MATRIX = {
    deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS: "TTTFFFF",
    deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART: "TTTFFFF",
    deviceplugin.PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD: "TTTFFFF",
    deviceplugin.RESIZE_RUNS_DEVICE_ALLOCATION: "FFTTTTF",
    deviceplugin.COMPLETED_INIT_CONTAINER_READMITTED_ON_KUBELET_RESTART: "TTTTTTT",
}


@pytest.mark.parametrize("bug", list(MATRIX), ids=lambda bug: bug.issue)
def test_on_the_matrix_releases(bug):
    seen = "".join("T" if bug.affects(release) else "F" for release in MATRIX_VERSIONS)
    assert (bug.component, seen) == (KUBELET, MATRIX[bug]), [str(release) for release in MATRIX_VERSIONS]


@pytest.mark.parametrize(
    ("bug", "minor", "cell"),
    [
        (deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS, 28, "all"),
        (deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS, 33, "all"),
        (deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS, 34, "none"),
        (deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS, 37, "none"),
        (deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART, 28, "all"),
        (deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART, 33, "all"),
        (deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART, 34, "< 1.34.7"),
        (deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART, 35, "< 1.35.4"),
        (deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART, 36, "none"),
        (deviceplugin.PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD, 34, "< 1.34.7"),
        (deviceplugin.PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD, 35, "< 1.35.4"),
        (deviceplugin.PODRESOURCES_GET_ANSWERS_FOR_ENDED_POD, 37, "none"),
        (deviceplugin.RESIZE_RUNS_DEVICE_ALLOCATION, 32, "none"),
        (deviceplugin.RESIZE_RUNS_DEVICE_ALLOCATION, 36, "all"),
        (deviceplugin.RESIZE_RUNS_DEVICE_ALLOCATION, 37, "none"),
    ],
)
def test_bug_table_cells(bug, minor, cell):
    assert bugtable.affected_releases(bug, minor) == cell


@pytest.mark.parametrize(
    ("bug", "release", "text"),
    [
        (
            deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART,
            "1.33.13",
            "no fix on 1.33 (mainline: 1.36.0-alpha.1 by kubernetes#135485)",
        ),
        (
            deviceplugin.RESTARTED_CONTAINER_READMITTED_ON_KUBELET_RESTART,
            "1.34.10",
            "fixed in 1.34.7 by kubernetes#138027 (mainline: 1.36.0-alpha.1 by kubernetes#135485)",
        ),
        (
            deviceplugin.PODRESOURCES_LISTS_TERMINATED_PODS,
            "1.33.13",
            "no fix on 1.33 (mainline: 1.34.0-beta.0 by kubernetes#132028)",
        ),
    ],
)
def test_describe_fix(bug, release, text):
    assert bug.describe_fix(V(release)) == text
