"""report.html: one self-contained page (inline CSS, no script, no external resource), so it can be
mailed or attached as it is. Evidence folds out per clause, and is shown unfolded for a failed one."""

from __future__ import annotations

from html import escape

from device_conformance.certify.report_markdown import when
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Certification

CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 2em; color: #1b1f24; }
h1 { font-size: 1.5em; margin-bottom: .2em; }
table { border-collapse: collapse; width: 100%; margin: 1em 0; }
td:first-child { white-space: nowrap; }
th, td { border: 1px solid #c8ccd0; padding: .35em .6em; text-align: left; vertical-align: top; }
th { background: #eef1f4; }
.verdict { font-weight: bold; white-space: nowrap; padding: .1em .5em; border-radius: .3em; color: #fff; }
.PASS { background: #1f7a34; } .FAIL { background: #b42318; } .NA { background: #6b7280; }
.banner { font-size: 1.2em; font-weight: bold; padding: .5em 1em; color: #fff; display: inline-block; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.meta dt { font-weight: bold; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
details { margin: .3em 0 1em 0; } summary { cursor: pointer; }
.source { color: #555; font-size: .9em; }
"""
CLASS = {PASS: "PASS", FAIL: "FAIL", NOT_APPLICABLE: "NA"}


def _badge(verdict: str) -> str:
    return f'<span class="verdict {CLASS[verdict]}">{escape(verdict)}</span>'


def render(cert: Certification) -> str:
    s = cert.subject
    counts = cert.counts()
    meta = [
        ("Subject", f"{s.kind} {s.name}"),
        ("Version", s.version or "not given (--subject-version)"),
        ("Command", s.command or "started outside the tool"),
        ("Kubernetes APIs used", ", ".join(cert.api_versions)),
        ("Mode", cert.mode),
        ("Run", when(cert.started)),
        ("Counts", ", ".join(f"{n} {v}" for v, n in counts.items())),
    ]
    rows = "".join(
        f'<tr id="row-{escape(r.clause.id)}"><td><a href="#{escape(r.clause.id)}">{escape(r.clause.id)}</a></td>'
        f"<td>{_badge(r.verdict)}</td><td>{escape(r.clause.rule)}</td><td>{escape(r.message)}</td></tr>"
        for r in cert.results
    )
    sections = "".join(
        f'<section id="{escape(r.clause.id)}"><h3>{escape(r.clause.id)}: {escape(r.clause.title)} {_badge(r.verdict)}'
        f'</h3><p>{escape(r.clause.rule)}</p><p class="source">Source: {escape(r.clause.source)}</p>'
        f"<p>Finding: {escape(r.message)}</p>"
        + (
            f"<details{' open' if r.verdict == FAIL else ''}><summary>Evidence ({len(r.evidence)} line(s))</summary>"
            f"<pre>{escape(chr(10).join(r.evidence))}"
            "</pre></details>"
            if r.evidence
            else ""
        )
        + "</section>"
        for r in cert.results
    )
    notes = "".join(f"<li>{escape(n)}</li>" for n in cert.notes)
    banner_class = "PASS" if cert.passed else "FAIL"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Certification: {escape(s.kind)} {escape(s.name)}</title><style>{CSS}</style></head><body>"
        f"<h1>Certification of {escape(s.kind)} {escape(s.name)}</h1>"
        f'<div class="banner {banner_class}" id="result">{"PASSED" if cert.passed else "FAILED"}</div>'
        '<dl class="meta">'
        + "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in meta)
        + "</dl><h2>Summary</h2><table><thead><tr><th>Clause</th><th>Verdict</th><th>Rule</th><th>Finding</th>"
        f"</tr></thead><tbody>{rows}</tbody></table><h2>Clauses</h2>{sections}"
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )
