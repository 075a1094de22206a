"""Suite-local fixtures: a safety net (a test that stopped the kubelet or forged its checkpoint leaves a working
node), and the skip for runtimes that cannot hand DRA devices (CDI) to containers."""

import pytest

from device_conformance.framework import SavedFiles, cdi_support, dra_state


@pytest.fixture
def kubelet_restored(node):
    """Remembers the DRA manager's files (dra_manager_state, and dra_health_state or its absence); after the test,
    puts them back and starts the kubelet if it is down. Yields dra_manager_state's bytes."""
    saved = SavedFiles.take(node)
    original = saved.files[dra_state.DEFAULT_PATH]
    assert original is not None, f"the kubelet on {node.name} has no {dra_state.DEFAULT_PATH}"
    yield original
    if not node.kubelet.healthy():
        try:
            node.kubelet.stop()  # a crashed kubelet: make sure the process is gone before starting
        except Exception:
            pass
        saved.put_back(node)  # with no kubelet running: none can write them over
        node.kubelet.start()


@pytest.fixture
def cdi_runtime(node):
    """Skips a test whose devices reach the container through CDI when the node's runtime has none."""
    ok, why = cdi_support(node.runtime_info(), "the node's container runtime")
    if not ok:
        pytest.skip(f"the container runtime has no CDI, so DRA devices cannot reach containers: {why}")
