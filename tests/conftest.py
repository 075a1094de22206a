"""Shared by every test under tests/ (the layout: tests/README.md).

The folders under tests/ are not packages: pytest's default import mode puts a test file's folder on
sys.path and imports the file by its name. The helpers more than one folder uses live in tests/helpers/,
put on sys.path here, so a test imports them by name (`from fake_k8s_tree import source_tree`).
bench/run.py and bench/soak.py load as modules for tests/bench/ and tests/repo/test_ci_run.py.
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent / "helpers"))


@pytest.fixture(scope="module")
def bench_run():
    """bench/run.py as a module (bench/ is not a package)."""
    spec = importlib.util.spec_from_file_location("bench_run", ROOT / "bench" / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def soak():
    """bench/soak.py as a module."""
    spec = importlib.util.spec_from_file_location("bench_soak", ROOT / "bench" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_soak"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
