"""The layer contract (pyproject.toml, [tool.importlinter]) holds, and there is no import cycle.

import-linter sees only src/device_conformance/. The folders outside it are checked here by their
import statements: fixtures/ (installed as device_conformance.fixtures, between pytest_plugin and the
providers' layer), suites/ and bench/ (scripts and tests on top, not packages).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "device_conformance"

# folder -> packages its modules must not import (a package forbids its submodules too)
FORBIDDEN = {
    # Above fixtures only the pytest plugin and the CLI.
    "fixtures": ("device_conformance.cli", "device_conformance.pytest_plugin"),
    # Suites state claims about the kubelet through fixtures and the libraries: never a particular
    # provider (they run on any), the toolchain (no test builds binaries) or the CLI.
    "suites": (
        "device_conformance.cli",
        "device_conformance.toolchain",
        "device_conformance.providers.local",
        "device_conformance.providers.kind",
        "device_conformance.providers.existing",
    ),
    "bench": ("device_conformance.cli", "device_conformance.pytest_plugin", "device_conformance.fixtures"),
}


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import in a file; `from a import b` yields a.b as well as a."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def violations(files: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{line} imports {module}"
        for path in files
        for line, module in imported_modules(path)
        if any(module == package or module.startswith(package + ".") for package in forbidden)
    ]


def test_the_layer_contract_holds_and_nothing_imports_in_a_cycle(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    code = lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    assert code == 0, capsys.readouterr().out


@pytest.mark.parametrize("folder", sorted(FORBIDDEN))
def test_folders_outside_the_package_import_only_what_their_layer_may(folder):
    assert violations(sorted((ROOT / folder).rglob("*.py")), FORBIDDEN[folder]) == []


def test_the_package_never_imports_the_fixtures_except_from_the_pytest_plugin():
    files = [path for path in SRC.rglob("*.py") if path.relative_to(SRC).parts[0] not in ("pytest_plugin", "protos")]
    assert violations(files, ("device_conformance.fixtures",)) == []


def test_the_check_finds_a_forbidden_import(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from device_conformance import cli\nimport device_conformance.toolchain.binaries\n")
    found = [line for line, _ in imported_modules(module)]
    assert found == [1, 1, 2]
    assert violations([module], ("device_conformance.cli",)) == [f"{module}:1 imports device_conformance.cli"]


def unlayered(package: Path, layered: set[str]) -> list[str]:
    """The package's modules in no layer: each top-level module or subpackage must be named, or each of its
    modules at the next level (as wait.core, wait.kube ... are)."""
    missing = []
    for path in sorted(package.iterdir()):
        name = path.stem if path.suffix == ".py" else path.name
        if (
            name.startswith("_")
            or name == "__pycache__"
            or not (path.suffix == ".py" or (path / "__init__.py").exists())
        ):
            continue
        dotted = f"device_conformance.{name}"
        if dotted in layered:
            continue
        if path.is_dir() and (inner := [f"{dotted}.{p.stem}" for p in path.glob("*.py") if p.stem != "__init__"]):
            missing += [module for module in inner if module not in layered]
        else:
            missing.append(dotted)
    return missing


def test_every_module_of_the_package_is_in_a_layer():
    from device_conformance.cli import layers_doc

    layered = {m for layer in layers_doc.layers((ROOT / "pyproject.toml").read_text()) for m in layer.modules}
    assert unlayered(SRC, layered) == [], "add them to a layer of pyproject.toml's [tool.importlinter] contract"


def test_the_layer_check_finds_a_module_in_no_layer(tmp_path):
    (tmp_path / "loose.py").write_text("")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "split").mkdir()
    (tmp_path / "split" / "__init__.py").write_text("")
    (tmp_path / "split" / "a.py").write_text("")
    (tmp_path / "split" / "b.py").write_text("")
    (tmp_path / "data").mkdir()  # a data folder (no __init__.py) is not a module
    layered = {"device_conformance.split.a"}
    assert unlayered(tmp_path, layered) == [
        "device_conformance.loose",
        "device_conformance.pkg",
        "device_conformance.split.b",
    ]
