"""The report folder: junit.xml, report.md, report.html, result.json, and the subject's work folders
(subject-*: its log) of a certify run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from device_conformance.certify import report_html, report_junit, report_markdown
from device_conformance.certify.verdicts import Certification
from device_conformance.core.errors import BadInput

FILES = ("junit.xml", "report.md", "report.html", "result.json")
SUBJECT_DIR_PREFIX = "subject-"  # cli/certify.py makes one per run for the subject's log
FOREIGN_SHOWN = 5


def write_report(cert: Certification, out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    texts = {
        "junit.xml": report_junit.render(cert),
        "report.md": report_markdown.render(cert),
        "report.html": report_html.render(cert),
        "result.json": json.dumps(cert.to_dict(), indent=2, sort_keys=True) + "\n",
    }
    paths = {}
    for name, text in texts.items():
        paths[name] = out_dir / name
        paths[name].write_text(text, encoding="utf-8")
    return paths


def _ours(entry: Path) -> bool:
    """What a certify run writes into its report folder: the report files and the subject's work folders."""
    if entry.name in FILES:
        return entry.is_symlink() or entry.is_file()
    return entry.name.startswith(SUBJECT_DIR_PREFIX) and entry.is_dir() and not entry.is_symlink()


def clean_report_dir(out_dir: Path) -> list[str]:
    """Make `out_dir` an empty report folder before a run, so no earlier run's subject log or report is left
    beside the new one. It removes only what a certify run writes there (FILES, subject-* folders) and
    refuses a folder holding anything else, naming it: never delete what the user put there. Returns the
    names removed."""
    if not out_dir.exists():
        out_dir.mkdir(parents=True)
        return []
    if not out_dir.is_dir():
        raise BadInput(f"--out {out_dir} is not a folder", "give --out a new folder or a certify run's report folder")
    entries = sorted(out_dir.iterdir())
    foreign = [e.name for e in entries if not _ours(e)]
    if foreign:
        shown = ", ".join(foreign[:FOREIGN_SHOWN]) + (", ..." if len(foreign) > FOREIGN_SHOWN else "")
        raise BadInput(
            f"--out {out_dir} holds {len(foreign)} entr{'y' if len(foreign) == 1 else 'ies'} a certify run "
            f"does not write: {shown}",
            "give --out a new or empty folder (a certify run replaces only its own report files "
            f"{', '.join(FILES)} and {SUBJECT_DIR_PREFIX}* folders), or move those entries away",
        )
    for entry in entries:
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    return [e.name for e in entries]
