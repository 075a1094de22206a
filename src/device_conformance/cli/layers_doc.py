"""docs/architecture.md's layer list, rendered from the import-linter contract in pyproject.toml (a derived doc:
`make docs` writes it, `make test` fails while it is stale).

The contract is the one source: its "Layers" entries, top to bottom, each with the comment lines written above
it as its description, and its "forbidden" contracts. The comments are read from the file's text, as TOML
parsers drop them; the entries are checked against the parsed contract, so a reformatted file cannot render a
different list from the one import-linter enforces.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from device_conformance.core.errors import ConformanceError

START = "<!-- layers: rendered from pyproject.toml's import-linter contract by `make docs` -->"
END = "<!-- /layers -->"
PACKAGE = "device_conformance."
_ENTRY = re.compile(r'^\s*"(?P<layer>[^"]+)",\s*$')
_COMMENT = re.compile(r"^\s*#\s?(?P<text>.*)$")


@dataclass(frozen=True)
class Layer:
    """One layer: its modules, whether they are independent of each other (`|`), and its description."""

    modules: tuple[str, ...]
    independent: bool
    description: str


def layers(pyproject_text: str) -> list[Layer]:
    """The "Layers" contract's layers, top to bottom, with the comments above each entry."""
    contracts = tomllib.loads(pyproject_text)["tool"]["importlinter"]["contracts"]
    wanted = next(c["layers"] for c in contracts if c.get("type") == "layers")
    lines = pyproject_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "layers = [")
    found: list[Layer] = []
    comments: list[str] = []
    for line in lines[start + 1 :]:
        if line.strip() == "]":
            break
        if comment := _COMMENT.match(line):
            comments.append(comment["text"].strip())
        elif entry := _ENTRY.match(line):
            text = entry["layer"]
            independent = "|" in text
            modules = tuple(m.strip() for m in re.split(r"[|:]", text))
            found.append(Layer(modules, independent, " ".join(comments)))
            comments = []
    if [_joined(layer) for layer in found] != [_normalised(entry) for entry in wanted]:
        raise ConformanceError(
            "pyproject.toml's layers could not be read line by line: keep one quoted layer per line, comments above"
        )
    return found


def forbidden(pyproject_text: str) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """(name, source modules, forbidden modules) of each "forbidden" contract."""
    contracts = tomllib.loads(pyproject_text)["tool"]["importlinter"]["contracts"]
    return [
        (c["name"], tuple(c["source_modules"]), tuple(c["forbidden_modules"]))
        for c in contracts
        if c.get("type") == "forbidden"
    ]


def markdown(pyproject_text: str) -> str:
    """The numbered layer list and the forbidden contracts, as docs/architecture.md shows them."""
    out = []
    for number, layer in enumerate(layers(pyproject_text), 1):
        separator = " | " if layer.independent else ", "
        names = separator.join(f"`{_short(m)}`" for m in layer.modules)
        note = " (independent of each other)" if layer.independent and len(layer.modules) > 1 else ""
        out.append(f"{number}. {names}{note}" + (f": {layer.description}" if layer.description else ""))
    for name, sources, banned in forbidden(pyproject_text):
        out.append("")
        out.append(
            f"{name}: {', '.join(f'`{_short(s)}`' for s in sources)} never import "
            f"{', '.join(f'`{_short(b)}`' for b in banned)}."
        )
    return "\n".join(out)


def with_layers(doc: str, pyproject_text: str) -> str:
    """`doc` with the text between the layer markers replaced by the rendered list."""
    if START not in doc or END not in doc:
        raise ConformanceError(f"docs/architecture.md has lost the layer list's markers {START} ... {END}")
    before, rest = doc.split(START, 1)
    _, after = rest.split(END, 1)
    return f"{before}{START}\n{markdown(pyproject_text)}\n{END}{after}"


def architecture(root: Path) -> str:
    """docs/architecture.md as it should be: the committed text with the layer list rendered now."""
    doc = (root / "docs" / "architecture.md").read_text(encoding="utf-8")
    return with_layers(doc, (root / "pyproject.toml").read_text(encoding="utf-8"))


def _short(module: str) -> str:
    return module.removeprefix(PACKAGE)


def _normalised(entry: str) -> str:
    return re.sub(r"\s*([|:])\s*", r"\1", entry.strip())


def _joined(layer: Layer) -> str:
    return ("|" if layer.independent else ":").join(layer.modules)
