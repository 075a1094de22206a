"""`device-conformance docs` (`make docs`): write every doc derived from code; --check lists the stale ones.

DOCS is the one list of derived docs: a path in the checkout and the function giving its whole text, so a new
derived doc is one entry. tests/harness/test_derived_docs.py runs the check in `make test`.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import device_conformance
from device_conformance.certify import clauses
from device_conformance.cli import suites_table
from device_conformance.cli.scenarios import collect, render, table
from device_conformance.expectations import bugtable

FIX = "make docs"


def _bad_input_rows(root: Path) -> ModuleType:
    """tests/harness/bad_input_rows.py: the rows are test data (the test runs each), so they stay in tests/."""
    name = "_derived_docs_bad_input_rows"
    spec = importlib.util.spec_from_file_location(name, root / "tests" / "harness" / "bad_input_rows.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


DOCS: dict[str, Callable[[Path], str]] = {
    "docs/known-bugs.md": lambda root: bugtable.render(),
    "docs/scenarios.md": lambda root: render.markdown(table.build(collect.collect(root / "suites"))),
    "docs/certify-clauses.md": lambda root: clauses.markdown(),
    "docs/bad-input.md": lambda root: _bad_input_rows(root).markdown(),
    # Only the Suites table's counts; its rows are written by hand (cli/suites_table.py).
    "README.md": suites_table.readme,
}


def checkout() -> Path:
    """The checkout this package is installed from (`make venv` installs it editable): docs/ is there."""
    return Path(device_conformance.__file__).resolve().parents[2]


def generate(root: Path) -> dict[str, str]:
    """Every derived doc's text. Side by side: two of them collect the suites in a pytest subprocess."""
    with ThreadPoolExecutor() as pool:
        futures = {path: pool.submit(make, root) for path, make in DOCS.items()}
        return {path: future.result() for path, future in futures.items()}


def stale(root: Path, texts: dict[str, str] | None = None) -> list[str]:
    """The derived docs whose committed text is not what their code makes now."""
    texts = generate(root) if texts is None else texts
    return [path for path, text in texts.items() if _read(root / path) != text]


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "docs",
        help=f"write every doc derived from code ({FIX}); --check: list the stale ones",
        description="Regenerate the docs derived from code: " + ", ".join(DOCS) + ".",
    )
    p.add_argument("--check", action="store_true", help=f"write nothing; exit 1 naming each stale doc and `{FIX}`")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    root = checkout()
    texts = generate(root)
    outdated = stale(root, texts)
    if args.check:
        for path in outdated:
            print(f"stale: {path}")
        print(f"fix: {FIX}" if outdated else f"{len(DOCS)} derived docs up to date")
        return 1 if outdated else 0
    for path in outdated:
        (root / path).write_text(texts[path], encoding="utf-8")
        print(f"wrote {path}")
    print(f"{len(DOCS) - len(outdated)} of {len(DOCS)} derived docs were up to date")
    return 0
