"""docs/architecture.md's layer list is rendered from pyproject.toml's import-linter contract (cli/layers_doc.py)."""

from __future__ import annotations

import pytest

from device_conformance.cli import layers_doc
from device_conformance.core.errors import ConformanceError

PYPROJECT = """
[tool.importlinter]
root_package = "device_conformance"

[[tool.importlinter.contracts]]
name = "Layers"
type = "layers"
layers = [
    # The top: the CLI
    # and the plugin.
    "device_conformance.cli | device_conformance.pytest_plugin",
    "device_conformance.kube : device_conformance.fakes",
    # The bottom.
    "device_conformance.core.errors",
]

[[tool.importlinter.contracts]]
name = "No kube in fakes"
type = "forbidden"
source_modules = ["device_conformance.fakes"]
forbidden_modules = ["device_conformance.kube"]
"""


def test_each_layer_comes_with_the_comments_above_it():
    assert layers_doc.layers(PYPROJECT) == [
        layers_doc.Layer(
            ("device_conformance.cli", "device_conformance.pytest_plugin"), True, "The top: the CLI and the plugin."
        ),
        layers_doc.Layer(("device_conformance.kube", "device_conformance.fakes"), False, ""),
        layers_doc.Layer(("device_conformance.core.errors",), False, "The bottom."),
    ]


def test_the_list_replaces_only_the_text_between_the_markers():
    doc = f"# Architecture\n\nBefore.\n\n{layers_doc.START}\nold list\n{layers_doc.END}\n\nAfter.\n"
    assert layers_doc.with_layers(doc, PYPROJECT) == (
        f"# Architecture\n\nBefore.\n\n{layers_doc.START}\n"
        "1. `cli` | `pytest_plugin` (independent of each other): The top: the CLI and the plugin.\n"
        "2. `kube`, `fakes`\n"
        "3. `core.errors`: The bottom.\n"
        "\n"
        "No kube in fakes: `fakes` never import `kube`.\n"
        f"{layers_doc.END}\n\nAfter.\n"
    )


def test_a_doc_without_the_markers_is_refused():
    with pytest.raises(ConformanceError, match="lost the layer list's markers"):
        layers_doc.with_layers("# Architecture\n", PYPROJECT)


def test_a_layer_written_over_two_lines_is_refused_rather_than_rendered_wrong():
    split = PYPROJECT.replace(
        '"device_conformance.cli | device_conformance.pytest_plugin",',
        '"device_conformance.cli | device_conformance.pytest_plugin"\n    ,',
    )
    with pytest.raises(ConformanceError, match="one quoted layer per line"):
        layers_doc.layers(split)
