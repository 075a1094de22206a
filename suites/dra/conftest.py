"""Suite-local safety net: a test that stopped the kubelet or forged its checkpoint leaves a working node."""

import pytest

from device_conformance.kubelet_state import dra as dra_state


@pytest.fixture
def kubelet_restored(node):
    """Remembers dra_manager_state; after the test, puts it back and starts the kubelet if it is down."""
    original = node.read_file(dra_state.DEFAULT_PATH)
    yield original
    if not node.kubelet.healthy():
        node.write_file(dra_state.DEFAULT_PATH, original)
        try:
            node.kubelet.stop()  # a crashed kubelet: make sure the process is gone before starting
        except Exception:
            pass
        node.kubelet.start()
