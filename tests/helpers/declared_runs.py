"""pytester runs of a small test module with the cluster's version fixed (no cluster), and the known bug
they declare: shared by the declarative-marker tests (tests/pytest_plugin/) and the tests of version skew and
patched trees (tests/expectations/, tests/toolchain/)."""

AFFECTED = "1.35.4"  # PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE: since 1.10, fixed in 1.37.0 by kubernetes#135437
FIXED = "1.37.0"

ROLLOUT_BUG = "from device_conformance.expectations.deviceplugin import PLUGIN_ROLLOUT_ZEROES_ALLOCATABLE as BUG\n"


def rollout_bug_module(body):
    """A test module whose one test declares ROLLOUT_BUG and runs `body` (indented) with shows_known_bug."""
    return f"""
import pytest
{ROLLOUT_BUG}
@pytest.mark.known_bug(BUG)
def test_x(shows_known_bug):
{body}
"""


def run(pytester, version, source, *args):
    """Run `source` as a test module with kube_version fixed at `version`."""
    pytester.makeconftest(
        f"""
import pytest
from device_conformance.expectations.versions import KubeVersion

@pytest.fixture(scope="session")
def kube_version():
    return KubeVersion.parse({version!r})

@pytest.fixture(scope="session")
def control_plane_version(kube_version):
    return kube_version
"""
    )
    pytester.makepyfile(test_declared=source)
    return pytester.runpytest("--strict-markers", "-p", "no:cacheprovider", "-rsxX", *args)
