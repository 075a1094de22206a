"""report.md: a summary first (what ran, what passed, each FAIL on one line, the NOT APPLICABLE clauses
counted and grouped by reason), then the FAILs with their evidence and the subject log's tail, then the
clauses that passed. Every text is printed through report_text.visible: no raw control character."""

from __future__ import annotations

import datetime

from device_conformance.certify import report_text as rt
from device_conformance.certify.verdicts import FAIL, PASS, Certification, ClauseResult


def _cell(text: str) -> str:
    return rt.one_line(text).replace("|", "\\|")


def when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _fence(lines: list[str]) -> list[str]:
    """A fenced block longer than any backtick run inside it (CommonMark 4.5), so no line can close it."""
    text = [rt.visible(line) for line in lines]
    ticks = "`" * max(3, _longest_backtick_run(text) + 1)
    return [ticks, *text, ticks]


def _longest_backtick_run(lines: list[str]) -> int:
    best = 0
    for line in lines:
        run = 0
        for char in line:
            run = run + 1 if char == "`" else 0
            best = max(best, run)
    return best


def summary_table(cert: Certification) -> str:
    """The clauses that ran (PASS and FAIL), then the NOT APPLICABLE ones counted by reason."""
    rows = ["| Clause | Verdict | Rule | Finding |", "|---|---|---|---|"]
    rows += [
        f"| {_cell(r.clause.id)} | **{rt.verdict_text(r)}** | {_cell(r.clause.rule)} | {_cell(rt.finding(r))} |"
        for r in rt.ran(cert)
    ]
    return "\n".join([*rows, "", *not_applicable_lines(cert)]).rstrip("\n")


def not_applicable_lines(cert: Certification) -> list[str]:
    groups = rt.not_applicable_groups(cert)
    if not groups:
        return []
    total = sum(len(g.ids) for g in groups)
    lines = [f"NOT APPLICABLE ({total}, not run), by reason:", ""]
    for group in groups:
        ids = ", ".join(_cell(i) for i in group.ids)
        lines += [f"- {len(group.ids)} clause(s): {_cell(group.reason)}", f"  Clauses: {ids}"]
    return lines


def _summary(cert: Certification) -> list[str]:
    out = ["## Summary", "", rt.ran_line(cert), ""]
    fails = rt.failed(cert)
    if fails:
        out += ["Failed:", "", *[f"- {_cell(rt.fail_line(r))}" for r in fails], ""]
    return [*out, summary_table(cert)]


def _clause(r: ClauseResult) -> list[str]:
    out = [
        "",
        f"### {rt.one_line(r.clause.id)}: {rt.one_line(r.clause.title)} ({rt.verdict_text(r)})",
        "",
        f"- Rule: {rt.one_line(r.clause.rule)}",
        f"- Source: {rt.one_line(r.clause.source)}",
        f"- Finding: {rt.one_line(r.message)}",
        *[f"- Not judged: {rt.one_line(note)}" for note in r.not_judged],
    ]
    return out + (["", *_fence(r.evidence)] if r.evidence else [])


def _subject_log(cert: Certification) -> list[str]:
    tail = rt.subject_log_tail(cert)
    if tail is None:
        return []
    path, lines = tail
    shown = _fence(lines) if lines else ["(empty)"]
    return [
        "",
        "## Subject log (tail)",
        "",
        f"Last {rt.SUBJECT_LOG_LINES} lines of `{rt.one_line(str(path))}`:",
        "",
        *shown,
    ]


def _log_texts(cert: Certification) -> list[tuple[str, str]]:
    tail = rt.subject_log_tail(cert)
    return [("subject log", line) for line in tail[1]] if tail else []


def render(cert: Certification) -> str:
    counts = cert.counts()
    s = cert.subject
    command = f"- Command: `{rt.one_line(s.command)}`" if s.command else "- Command: started outside the tool"
    out = [
        f"# Certification of {s.kind} {rt.one_line(s.name)}",
        "",
        f"- Subject: {rt.one_line(s.name)}, version {rt.one_line(s.version) or 'not given (--subject-version)'}",
        command,
        f"- Kubernetes APIs used: {', '.join(cert.api_versions)}",
        f"- Run: {when(cert.started)}, mode: {cert.mode}",
        f"- Result: **{'PASSED' if cert.passed else 'FAILED'}**: "
        + ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
        + rt.partly_judged_part(cert, "PASS"),
    ]
    warning = rt.control_warning(cert, _log_texts(cert))
    if warning:
        out += ["", f"> {warning}"]
    out += ["", *_summary(cert)]
    fails = [r for r in cert.results if r.verdict == FAIL]
    if fails:
        out += ["", "## Failed clauses"]
        for r in fails:
            out += _clause(r)
    out += _subject_log(cert)
    passes = [r for r in cert.results if r.verdict == PASS]
    if passes:
        out += ["", "## Passed clauses"]
        for r in passes:
            out += _clause(r)
    if cert.notes:
        out += ["", "## Notes", "", *[f"- {rt.one_line(n)}" for n in cert.notes]]
    return "\n".join(out) + "\n"
