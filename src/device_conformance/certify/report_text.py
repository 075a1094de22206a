"""What report.md and report.html share besides their markup: the summary's parts (what ran, the FAILs, the
NOT APPLICABLE clauses grouped by reason), the subject log's tail, and subject text made safe to print.

A subject's strings reach the report raw (device IDs, driver names, its log): one real plugin's device IDs are
"\\x00".."\\x03". Control characters are printed escaped (`\\x00`), and the report warns naming the values
that held them; result.json keeps the exact text (JSON escapes them itself).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, Certification, ClauseResult

# C0 and C1 controls and DEL, less tab and newline (text layout, kept where a text may span lines), and the
# bidirectional overrides that make text display in another order than it reads (Unicode TR #9, "Trojan
# Source", CVE-2021-42574).
CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_CONTROL = re.compile(CONTROL)
# A value holding a control character: the run of non-blank characters around it, quotes and brackets trimmed.
_VALUE = re.compile(f"[^ \t\n]*{CONTROL}[^ \t\n]*")
_TRIM = "\"'`,;:()[]{}<>"
SUBJECT_LOG_NOTE = "subject log: "  # the note certify/device_plugin.py and certify/dra_driver.py add
SUBJECT_LOG_LINES = 20
MAX_NAMED_VALUES = 12


def _escape(char: str) -> str:
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character escaped (`\\x00`, `\\u202e`); tab and newline kept."""
    return _CONTROL.sub(lambda m: _escape(m.group()), text)


def one_line(text: str) -> str:
    """`text` on one line (a table cell, a list item), control characters escaped."""
    return " ".join(visible(text).split("\n"))


def _texts(cert: Certification) -> list[tuple[str, str]]:
    """(where, text) of everything the report prints that came from the subject or its run."""
    s = cert.subject
    texts = [("subject name", s.name), ("subject version", s.version), ("command", s.command)]
    for r in cert.results:
        texts += [(f"{r.clause.id} id", r.clause.id), (f"{r.clause.id} title", r.clause.title)]
        texts.append((f"{r.clause.id} finding", r.message))
        texts += [(f"{r.clause.id} not judged", note) for note in r.not_judged]
        texts += [(f"{r.clause.id} evidence", line) for line in r.evidence]
    texts += [("notes", note) for note in cert.notes]
    return texts


def control_values(cert: Certification, extra: Sequence[tuple[str, str]] = ()) -> dict[str, list[str]]:
    """Each value holding a control character, escaped -> where it was (first seen first)."""
    found: dict[str, list[str]] = {}
    for where, text in [*_texts(cert), *extra]:
        for match in _VALUE.finditer(text):
            value = visible(match.group().strip(_TRIM) or match.group())
            places = found.setdefault(value, [])
            if where not in places:
                places.append(where)
    return found


def control_warning(cert: Certification, extra: Sequence[tuple[str, str]] = ()) -> str:
    """One line naming the values with control characters, or "" when there are none."""
    found = control_values(cert, extra)
    if not found:
        return ""
    named = [f"{value} ({visible(', '.join(places))})" for value, places in list(found.items())[:MAX_NAMED_VALUES]]
    more = f"; and {len(found) - MAX_NAMED_VALUES} more" if len(found) > MAX_NAMED_VALUES else ""
    return (
        f"Warning: {len(found)} value(s) hold control characters, printed escaped here (exact in result.json): "
        + "; ".join(named)
        + more
    )


def ran(cert: Certification) -> list[ClauseResult]:
    return [r for r in cert.results if r.verdict != NOT_APPLICABLE]


def failed(cert: Certification) -> list[ClauseResult]:
    return [r for r in cert.results if r.verdict == FAIL]


@dataclass(frozen=True)
class NotApplicableGroup:
    reason: str
    ids: list[str]


def not_applicable_groups(cert: Certification) -> list[NotApplicableGroup]:
    """The NOT APPLICABLE clauses grouped by their reason: the largest group first, then in report order."""
    groups: dict[str, list[str]] = {}
    for r in cert.results:
        if r.verdict == NOT_APPLICABLE:
            groups.setdefault(r.message, []).append(r.clause.id)
    ordered = sorted(groups.items(), key=lambda item: -len(item[1]))  # stable: ties keep report order
    return [NotApplicableGroup(reason, ids) for reason, ids in ordered]


def ran_line(cert: Certification) -> str:
    counts = cert.counts()
    return (
        f"Ran {len(ran(cert))} of {len(cert.results)} clauses: {counts['PASS']} passed{partly_judged_part(cert)}, "
        f"{counts[FAIL]} failed; {counts[NOT_APPLICABLE]} NOT APPLICABLE (not run)."
    )


def partly_judged_part(cert: Certification, which: str = "of them") -> str:
    """The part of a summary line that counts the PASSes with checks not judged ("" when there are none)."""
    return partly_judged_count(len(cert.partly_judged()), which)


def partly_judged_count(partly: int, which: str = "") -> str:
    """ " (N <which> with checks not judged)", or "" for none: the one wording of that count (reports, summary)."""
    return f" ({' '.join(filter(None, (str(partly), which)))} with checks not judged)" if partly else ""


def verdict_text(result: ClauseResult) -> str:
    """The verdict as the report prints it: a PASS with checks not judged says so ("PASS; not judged: 2 checks")."""
    if not result.partly_judged:
        return result.verdict
    count = len(result.not_judged)
    return f"{result.verdict}; not judged: {count} check{'s' if count > 1 else ''}"


def finding(result: ClauseResult) -> str:
    """The finding, followed by each check that could not judge the subject."""
    if not result.not_judged:
        return result.message
    return f"{result.message}; not judged: " + "; ".join(result.not_judged)


def fail_line(result: ClauseResult) -> str:
    """One line per FAIL: clause id, title, the finding's first line."""
    message = result.message.strip().split("\n", 1)[0]
    return one_line(f"{result.clause.id} ({result.clause.title}): {message}")


def subject_log_path(cert: Certification) -> Path | None:
    """The subject's log the run's notes name (`subject log: PATH`), if any."""
    paths = [n.removeprefix(SUBJECT_LOG_NOTE) for n in cert.notes if n.startswith(SUBJECT_LOG_NOTE)]
    return Path(paths[-1]) if paths else None


def subject_log_tail(cert: Certification, lines: int = SUBJECT_LOG_LINES) -> tuple[Path, list[str]] | None:
    """(path, its last `lines` lines) of the subject's log when the run had a FAIL and the notes name the log."""
    path = subject_log_path(cert)
    if path is None or not failed(cert):
        return None
    try:
        return path, path.read_text(errors="replace").splitlines()[-lines:]
    except OSError as exc:
        return path, [f"(could not read it: {type(exc).__name__}: {exc.strerror or exc})"]
