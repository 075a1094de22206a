"""Session fixtures: the certifier's verdicts on our fakes without defects (each run takes a few seconds)."""

import shutil
import tempfile
from pathlib import Path

import pytest
from certify_subjects import run_device_plugin, run_dra_driver


@pytest.fixture(scope="session")
def clean_device_plugin():
    return run_device_plugin()


@pytest.fixture(scope="session")
def clean_dra_driver():
    return run_dra_driver()


@pytest.fixture
def plugin_root():
    """A short directory for sockets (tmp_path can exceed sun_path's 107 bytes)."""
    root = Path(tempfile.mkdtemp(prefix="ccli-", dir="/tmp"))
    yield root
    shutil.rmtree(root, ignore_errors=True)
