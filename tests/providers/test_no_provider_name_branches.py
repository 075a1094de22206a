"""No code outside src/device_conformance/providers/ branches on a provider's name: it asks the provider's
capabilities (settings.PROVIDER_CAPABILITIES, Settings.capabilities, ClusterHandle.capabilities), so a new
provider is its folder and its registry entry. Checked by the syntax tree: a comparison (==, !=, is, in a literal
tuple/list/set) or a `case` with a provider's name as a string literal."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from device_conformance.settings import PROVIDERS

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("src/device_conformance", "fixtures", "suites", "bench")
# Where a provider's name may be compared: the providers' own code.
EXEMPT = ("src/device_conformance/providers/",)
# path: (how many, why) for comparisons that stay.
ALLOWED = {
    # The bench measures two named providers side by side (its --provider local|kind adds kind's figures to the
    # local ones): which provider is the measurement, not a capability.
    "bench/run.py": (1, "the bench's own --provider local|kind"),
}
EQUALITY = (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)
MEMBERSHIP = (ast.In, ast.NotIn)


def _names(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in PROVIDERS:
        return {node.value}
    return set()


def name_branches(source: str, filename: str = "<string>") -> list[tuple[int, str]]:
    """(line, name) for each comparison of something to a provider's name written as a literal."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:], strict=False):
                if isinstance(op, EQUALITY):
                    found += [(node.lineno, name) for side in (left, right) for name in _names(side)]
                elif isinstance(op, MEMBERSHIP) and isinstance(right, ast.Tuple | ast.List | ast.Set):
                    found += [(node.lineno, name) for element in right.elts for name in _names(element)]
        elif isinstance(node, ast.MatchValue):
            found += [(node.lineno, name) for name in _names(node.value)]
    return sorted(found)


def _files() -> list[Path]:
    files = [path for folder in CHECKED for path in sorted((ROOT / folder).rglob("*.py"))]
    return [path for path in files if not str(path.relative_to(ROOT)).startswith(EXEMPT)]


def test_no_module_outside_the_providers_compares_a_provider_name():
    found = {}
    for path in _files():
        branches = name_branches(path.read_text(encoding="utf-8"), str(path))
        if branches:
            found[str(path.relative_to(ROOT))] = branches
    unexpected = {path: branches for path, branches in found.items() if len(branches) > ALLOWED.get(path, (0, ""))[0]}
    assert unexpected == {}, "ask the provider's capabilities (settings.ProviderCapabilities) instead"
    stale = sorted(path for path in ALLOWED if path not in found)
    assert stale == [], "the branch is gone: drop its ALLOWED entry"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('if provider == "kind": pass', [(1, "kind")]),
        ('if "existing" != settings.provider.value: pass', [(1, "existing")]),
        ('ok = provider not in ("kind", "existing")', [(1, "existing"), (1, "kind")]),
        ('match provider:\n    case "local":\n        pass', [(2, "local")]),
        ('ok = "kind" in obj', []),  # a key named kind, not a provider
        ('ok = obj["kind"] == "Pod"', []),
        ('ok = parts == ("usr", "local", "bin")', []),
        ('env = {"GOTOOLCHAIN": "local"}', []),
    ],
)
def test_the_check_finds_name_comparisons_and_only_those(source, expected):
    assert name_branches(source) == expected
