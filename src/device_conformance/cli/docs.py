"""`device-conformance docs` (`make docs`): write every doc derived from code; --check lists the stale ones.

DOCS is the one list of derived docs: a path in the checkout and the function giving its whole text, so a new
derived doc is one entry. Besides them, the recorded excerpt of upstream's release notes (expectations/notes_excerpt.py)
is derived from the bug data and a module zip: stale when recorded for other bug numbers than KNOWN_BUGS names, it is
recorded again from the zip of the same tag (`go mod download`; --notes-zip gives one). `--check` never downloads.
tests/repo/test_derived_docs.py runs the check in `make test`.
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
from device_conformance.cli import layers_doc, suites_table
from device_conformance.cli.scenarios import collect, render, table
from device_conformance.core.errors import BadInput
from device_conformance.expectations import bugtable, notes_excerpt
from device_conformance.toolchain.go_tmpdir import which_go
from device_conformance.toolchain.gobuild import go_mod_download

FIX = "make docs"


def _bad_input_rows(root: Path) -> ModuleType:
    """tests/repo/bad_input_rows.py: the rows are test data (the test runs each), so they stay in tests/."""
    name = "_derived_docs_bad_input_rows"
    spec = importlib.util.spec_from_file_location(name, root / "tests" / "repo" / "bad_input_rows.py")
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
    # Only the layer list, from pyproject.toml's import-linter contract (cli/layers_doc.py).
    "docs/architecture.md": layers_doc.architecture,
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
    """The derived docs whose committed text is not what their code makes now, and the release-notes excerpt
    when it was recorded for other bug numbers."""
    outdated = stale_docs(root, texts)
    if excerpt_staleness(root) is not None:
        outdated.append(notes_excerpt.FOLDER)
    return outdated


def stale_docs(root: Path, texts: dict[str, str] | None = None) -> list[str]:
    """The derived docs (DOCS) whose committed text is not what their code makes now."""
    texts = generate(root) if texts is None else texts
    return [path for path, text in texts.items() if _read(root / path) != text]


def excerpt_staleness(root: Path) -> str | None:
    return notes_excerpt.staleness(root / notes_excerpt.FOLDER, bugtable.KNOWN_BUGS)


def module_zip(tag: str) -> Path:
    """The k8s.io/kubernetes module zip of `tag`, from the module cache or the Go module proxy. A zip whose go.mod
    needs a newer Go than the local one is still downloaded: `go mod download` reports that as the record's Error
    but names the Zip (as cli/bugs.py newest_notes reads it)."""
    go = which_go()
    spec = f"{notes_excerpt.MODULE}@{tag}"
    if go is None:
        raise notes_excerpt.ZipUnavailable(f"no Go toolchain is on PATH to run `go mod download -json {spec}`")
    records, problem = go_mod_download([spec], go)
    zip_path = Path(records[0]["Zip"]) if records and records[0].get("Zip") else None
    if zip_path is None or not zip_path.is_file():
        # go's own Error often starts with the spec that go_mod_download puts before it
        problem = (problem or "no Zip").replace(f"{spec}: {spec}: ", f"{spec}: ")
        raise notes_excerpt.ZipUnavailable(f"`go mod download -json {spec}` gave none: {problem}")
    return zip_path


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.exists() else None


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "docs",
        help=f"write every doc derived from code ({FIX}); --check: list the stale ones",
        description="Regenerate the docs derived from code: " + ", ".join(DOCS) + ".",
    )
    p.add_argument("--check", action="store_true", help=f"write nothing; exit 1 naming each stale doc and `{FIX}`")
    p.add_argument(
        "--notes-zip",
        type=Path,
        metavar="ZIP",
        help=f"record {notes_excerpt.FOLDER} from this k8s.io/kubernetes module zip (even when it is current) "
        "instead of downloading the zip of the tag it was recorded from",
    )
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    root = checkout()
    total = len(DOCS) + 1  # and the excerpt
    if args.check:
        if args.notes_zip is not None:
            raise BadInput("--check reads no zip", "drop --notes-zip, or --check")
        outdated = stale_docs(root)
        reason = excerpt_staleness(root)
        if reason is not None:
            outdated.append(f"{notes_excerpt.FOLDER} ({reason})")
        for path in outdated:
            print(f"stale: {path}")
        print(f"fix: {FIX}" if outdated else f"{total} derived docs up to date")
        return 1 if outdated else 0
    if args.notes_zip is not None and not args.notes_zip.is_file():
        raise BadInput(f"--notes-zip {args.notes_zip} is no file", "give the path `go mod download -json` names as Zip")
    # The excerpt first: when its zip cannot be had, nothing is written.
    folder = root / notes_excerpt.FOLDER
    excerpt = notes_excerpt.update(folder, bugtable.KNOWN_BUGS, module_zip, args.notes_zip)
    texts = generate(root)
    outdated = stale_docs(root, texts)
    for path in outdated:
        (root / path).write_text(texts[path], encoding="utf-8")
        print(f"wrote {path}")
    if excerpt is not None:
        notes_excerpt.write(folder, excerpt)
        print(f"wrote {notes_excerpt.FOLDER}/ (from the k8s.io/kubernetes {notes_excerpt.recorded_tag(folder)} zip)")
    written = len(outdated) + (excerpt is not None)
    print(f"{total - written} of {total} derived docs were up to date")
    return 0
