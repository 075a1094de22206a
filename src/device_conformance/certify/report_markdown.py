"""report.md: the summary table a vendor pastes, then each clause with its rule, source and evidence."""

from __future__ import annotations

import datetime

from device_conformance.certify.verdicts import Certification


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def summary_table(cert: Certification) -> str:
    rows = ["| Clause | Verdict | Rule | Finding |", "|---|---|---|---|"]
    rows += [f"| {r.clause.id} | **{r.verdict}** | {_cell(r.clause.rule)} | {_cell(r.message)} |" for r in cert.results]
    return "\n".join(rows)


def render(cert: Certification) -> str:
    counts = cert.counts()
    s = cert.subject
    out = [
        f"# Certification of {s.kind} {s.name}",
        "",
        f"- Subject: {s.name}, version {s.version or 'not given (--subject-version)'}",
        f"- Command: `{s.command}`" if s.command else "- Command: started outside the tool",
        f"- Kubernetes APIs used: {', '.join(cert.api_versions)}",
        f"- Run: {when(cert.started)}, mode: {cert.mode}",
        f"- Result: **{'PASSED' if cert.passed else 'FAILED'}**: "
        + ", ".join(f"{n} {verdict}" for verdict, n in counts.items()),
        "",
        summary_table(cert),
        "",
        "## Clauses",
    ]
    for r in cert.results:
        out += [
            "",
            f"### {r.clause.id}: {r.clause.title} ({r.verdict})",
            "",
            f"- Rule: {r.clause.rule}",
            f"- Source: {r.clause.source}",
            f"- Finding: {r.message}",
        ]
        if r.evidence:
            out += ["", "```", *r.evidence, "```"]
    if cert.notes:
        out += ["", "## Notes", "", *[f"- {n}" for n in cert.notes]]
    return "\n".join(out) + "\n"
