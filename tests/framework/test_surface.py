"""device_conformance.framework as the one import surface of suites/: every name it exports is there, every
expectation a test reads is among them, and the suites take those names from it and keep no copy of a helper
(a helper two suite modules need lives in framework/)."""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from pathlib import Path

import pytest

from device_conformance import framework
from device_conformance.expectations import deviceplugin as deviceplugin_expectations
from device_conformance.expectations import dra as dra_expectations
from device_conformance.expectations.behaviour import Behaviour, KnownBug
from device_conformance.framework import markers

SUITES = Path(__file__).resolve().parents[2] / "suites"


def test_every_exported_name_is_there_once():
    assert len(framework.__all__) == len(set(framework.__all__))
    assert [name for name in framework.__all__ if not hasattr(framework, name)] == []


@pytest.mark.parametrize("module", [dra_expectations, deviceplugin_expectations], ids=lambda m: m.__name__)
def test_every_known_bug_behaviour_and_version_gate_is_exported_as_itself(module):
    wanted = [
        name
        for name, value in vars(module).items()
        if isinstance(value, KnownBug | Behaviour)
        or (name.startswith("FIRST_") and name.endswith("_MINOR"))
        or name.endswith("_SINCE")
    ]
    assert wanted, f"nothing found in {module.__name__}"
    missing = [
        name for name in wanted if name not in framework.__all__ or getattr(framework, name) is not vars(module)[name]
    ]
    assert missing == [], f"add to framework/__init__.py: {missing}"


def test_the_shared_since_markers_are_since_markers_of_a_release_and_a_reason():
    found = {name: value for name, value in vars(markers).items() if name.startswith("SINCE_")}
    assert set(found) <= set(framework.__all__)
    for name, mark in found.items():
        release, reason = mark.args
        assert mark.name == "since" and release.startswith("1.") and len(reason) > 10, name
    assert markers.SINCE_DRA.args[0] == f"1.{dra_expectations.FIRST_DRA_MINOR}"


def suite_modules() -> list[Path]:
    return sorted(SUITES.rglob("*.py"))


def helpers_of(tree: ast.Module) -> list[str]:
    """Module-level functions that are neither tests nor fixtures."""
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and not node.name.startswith("test")
        and not any("fixture" in ast.unparse(d) for d in node.decorator_list)
    ]


def test_no_helper_is_defined_in_two_suite_modules_nor_again_beside_the_framework():
    where = defaultdict(list)
    for path in suite_modules():
        for name in helpers_of(ast.parse(path.read_text())):
            where[name].append(str(path.relative_to(SUITES)))
    copied = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert copied == {}, "a helper two suite modules need goes to framework/ (docs/writing-tests.md)"
    shadowing = {name: paths for name, paths in where.items() if name in framework.__all__}
    assert shadowing == {}, "these suite modules define a helper the framework exports: use the framework's"


def test_suites_take_the_names_the_framework_exports_from_it():
    """`from device_conformance.kube import pods` in a suite module is `pods` of the surface, imported the long
    way: it belongs in the module's one `from device_conformance.framework import (...)`."""
    long_way = []
    for path in suite_modules():
        for node in ast.parse(path.read_text()).body:
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith("device_conformance."):
                continue
            if node.module == "device_conformance.framework" or node.module.startswith("device_conformance.fixtures"):
                continue
            if node.module.startswith("device_conformance.framework."):
                long_way.append(f"{path.relative_to(SUITES)}: {node.module}")
                continue
            for alias in node.names:
                bound = alias.asname or alias.name
                if bound in framework.__all__ and getattr(framework, bound) is resolve(node.module, alias.name):
                    long_way.append(f"{path.relative_to(SUITES)}: {bound} from {node.module}")
    assert long_way == []


def resolve(module: str, name: str) -> object:
    imported = importlib.import_module(module)
    return getattr(imported, name) if hasattr(imported, name) else importlib.import_module(f"{module}.{name}")
