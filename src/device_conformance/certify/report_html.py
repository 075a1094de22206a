"""report.html: one self-contained page (inline CSS, no script, no external resource), so it can be
mailed or attached as it is. Like report.md: the summary first, then each FAIL with its evidence shown (a
<pre>, never folded) and the subject log's tail, the NOT APPLICABLE clauses counted by reason, and the passed
clauses with their evidence folded. Every text goes through report_text.visible, then html.escape."""

from __future__ import annotations

from html import escape

from device_conformance.certify import report_text as rt
from device_conformance.certify.report_markdown import when
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Certification, ClauseResult

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
.warning { border-left: .3em solid #b54708; background: #fffaeb; padding: .5em 1em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: .2em 1em; }
dl.meta dt { font-weight: bold; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
pre.evidence-fail { border-left: .3em solid #b42318; }
details { margin: .3em 0 1em 0; } summary { cursor: pointer; }
.source { color: #555; font-size: .9em; }
.not-judged { border-left: .3em solid #6b7280; padding-left: .5em; }
"""
CLASS = {PASS: "PASS", FAIL: "FAIL", NOT_APPLICABLE: "NA"}


def _t(text: str) -> str:
    """Subject text for HTML: control characters escaped visibly, then markup escaped."""
    return escape(rt.visible(text))


def _badge(verdict: str) -> str:
    return f'<span class="verdict {CLASS[verdict]}">{escape(verdict)}</span>'


def _not_judged_badge(r: ClauseResult) -> str:
    """Beside a PASS that could not judge every check: "NOT JUDGED: N" (report_text.verdict_text)."""
    if not r.partly_judged:
        return ""
    return f' <span class="verdict NA">{escape(rt.verdict_text(r).split("; ", 1)[1].upper())}</span>'


def _not_judged(r: ClauseResult) -> str:
    if not r.not_judged:
        return ""
    items = "".join(f"<li>{_t(note)}</li>" for note in r.not_judged)
    return f'<div class="not-judged">Not judged:<ul>{items}</ul></div>'


def _row(r: ClauseResult) -> str:
    cid = _t(r.clause.id)
    return (
        f'<tr id="row-{cid}"><td><a href="#{cid}">{cid}</a></td>'
        f"<td>{_badge(r.verdict)}{_not_judged_badge(r)}</td><td>{_t(r.clause.rule)}</td>"
        f"<td>{_t(r.message)}{_not_judged(r)}</td></tr>"
    )


def _evidence(r: ClauseResult) -> str:
    if not r.evidence:
        return ""
    text = _t("\n".join(r.evidence))
    if r.verdict == FAIL:  # shown, never folded: it is what the reader came for
        return f'<p>Evidence ({len(r.evidence)} line(s)):</p><pre class="evidence-fail">{text}</pre>'
    return f"<details><summary>Evidence ({len(r.evidence)} line(s))</summary><pre>{text}</pre></details>"


def _section(r: ClauseResult) -> str:
    cid = _t(r.clause.id)
    return (
        f'<section id="{cid}"><h3>{cid}: {_t(r.clause.title)} {_badge(r.verdict)}{_not_judged_badge(r)}</h3>'
        f'<p>{_t(r.clause.rule)}</p><p class="source">Source: {_t(r.clause.source)}</p>'
        f"<p>Finding: {_t(r.message)}</p>{_not_judged(r)}{_evidence(r)}</section>"
    )


def _not_applicable(cert: Certification) -> str:
    groups = rt.not_applicable_groups(cert)
    if not groups:
        return ""
    total = sum(len(g.ids) for g in groups)
    items = "".join(
        f"<li>{len(g.ids)} clause(s): {_t(g.reason)}<br>Clauses: {', '.join(_t(i) for i in g.ids)}</li>" for g in groups
    )
    return f'<h3 id="not-applicable">{_badge(NOT_APPLICABLE)} {total}, not run, by reason</h3><ul>{items}</ul>'


def _summary(cert: Certification) -> str:
    fails = rt.failed(cert)
    fail_items = "".join(f'<li><a href="#{_t(r.clause.id)}">{_t(rt.fail_line(r))}</a></li>' for r in fails)
    rows = "".join(_row(r) for r in rt.ran(cert))
    return (
        f"<h2>Summary</h2><p>{escape(rt.ran_line(cert))}</p>"
        + (f'<p>Failed:</p><ul class="fails">{fail_items}</ul>' if fails else "")
        + "<table><thead><tr><th>Clause</th><th>Verdict</th><th>Rule</th><th>Finding</th>"
        f"</tr></thead><tbody>{rows}</tbody></table>" + _not_applicable(cert)
    )


def _subject_log(cert: Certification) -> str:
    tail = rt.subject_log_tail(cert)
    if tail is None:
        return ""
    path, lines = tail
    return (
        f'<h2 id="subject-log">Subject log (tail)</h2><p>Last {rt.SUBJECT_LOG_LINES} lines of '
        f"<code>{_t(str(path))}</code>:</p><pre>{_t(chr(10).join(lines)) or '(empty)'}</pre>"
    )


def _sections(title: str, results: list[ClauseResult]) -> str:
    return f"<h2>{title}</h2>{''.join(_section(r) for r in results)}" if results else ""


def _meta(cert: Certification) -> str:
    s = cert.subject
    meta = [
        ("Subject", f"{s.kind} {s.name}"),
        ("Version", s.version or "not given (--subject-version)"),
        ("Command", s.command or "started outside the tool"),
        ("Kubernetes APIs used", ", ".join(cert.api_versions)),
        ("Mode", cert.mode),
        ("Run", when(cert.started)),
        ("Counts", ", ".join(f"{n} {v}" for v, n in cert.counts().items()) + rt.partly_judged_part(cert, "PASS")),
    ]
    return '<dl class="meta">' + "".join(f"<dt>{escape(k)}</dt><dd>{_t(v)}</dd>" for k, v in meta) + "</dl>"


def render(cert: Certification) -> str:
    s = cert.subject
    tail = rt.subject_log_tail(cert)
    warning = rt.control_warning(cert, [("subject log", line) for line in tail[1]] if tail else [])
    notes = "".join(f"<li>{_t(n)}</li>" for n in cert.notes)
    banner_class = "PASS" if cert.passed else "FAIL"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Certification: {escape(s.kind)} {_t(s.name)}</title><style>{CSS}</style></head><body>"
        f"<h1>Certification of {escape(s.kind)} {_t(s.name)}</h1>"
        f'<div class="banner {banner_class}" id="result">{"PASSED" if cert.passed else "FAILED"}</div>'
        + _meta(cert)
        + (f'<p class="warning" id="control-characters">{escape(warning)}</p>' if warning else "")
        + _summary(cert)
        + _sections("Failed clauses", rt.failed(cert))
        + _subject_log(cert)
        + _sections("Passed clauses", [r for r in cert.results if r.verdict == PASS])
        + (f"<h2>Notes</h2><ul>{notes}</ul>" if notes else "")
        + "</body></html>\n"
    )
