"""One table over several report folders (`certify summary`): what CI prints after certifying upstream's subjects."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from device_conformance.certify.report_text import one_line, partly_judged_count
from device_conformance.certify.verdicts import PASS, VERDICTS
from device_conformance.core.errors import BadInput


@dataclass(frozen=True)
class ReportRow:
    folder: str
    subject: str
    mode: str
    counts: dict[str, int]
    passed: bool
    # The PASSes with checks that could not judge the subject (verdicts.py Certification.partly_judged); 0 in
    # reports written before result.json counted them.
    partly_judged: int = 0


def read_reports(root: Path) -> list[ReportRow]:
    """Every report folder (one holding result.json) at root or one level below it, by folder name."""
    found = sorted(p for p in [root / "result.json", *root.glob("*/result.json")] if p.is_file())
    if not found:
        raise BadInput(
            f"no result.json in {root} or its subfolders",
            "give a report folder (a certify run's --out, a suite run's --vendor-report) or the folder holding them",
        )
    rows = []
    for path in found:
        try:
            result = json.loads(path.read_text())
            rows.append(
                ReportRow(
                    folder=path.parent.name,
                    subject=f"{result['subject']['name']} {result['subject'].get('version') or ''}".strip(),
                    mode=result["mode"].split(" (")[0],
                    counts={v: int(result["counts"].get(v, 0)) for v in VERDICTS},
                    passed=bool(result["passed"]),
                    partly_judged=int(result.get("partly_judged", 0)),
                )
            )
        except (ValueError, KeyError, TypeError) as exc:
            raise BadInput(
                f"{path} is not a certification result ({type(exc).__name__}: {exc})",
                "point at the folders `device-conformance certify` or `pytest --vendor-report` wrote",
            ) from exc
    return rows


def render(rows: list[ReportRow]) -> str:
    lines = ["| report | subject | mode | PASS | FAIL | NOT APPLICABLE | result |", "|---|---|---|---|---|---|---|"]
    lines += [
        # A subject's name is its vendor's text: printed with control characters escaped (report_text).
        f"| {one_line(r.folder)} | {one_line(r.subject)} | {one_line(r.mode)} | "
        + " | ".join(count_cell(r, v) for v in VERDICTS)
        + f" | {'PASSED' if r.passed else 'FAILED'} |"
        for r in rows
    ]
    return "\n".join(lines)


def count_cell(row: ReportRow, verdict: str) -> str:
    """A verdict's count; a PASS count says how many of them had checks not judged (none: the count alone)."""
    return str(row.counts[verdict]) + (partly_judged_count(row.partly_judged) if verdict == PASS else "")
