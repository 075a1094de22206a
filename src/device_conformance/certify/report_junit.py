"""JUnit XML: one testsuite per certification, one testcase per clause (FAIL = failure, NOT APPLICABLE =
skipped), evidence in system-out; CI systems render it without knowing anything about this tool. A clause with
checks that could not judge the subject has a `not_judged` property per check (as pytest's own JUnit XML writes
user properties) and the notes first in system-out; the suite then has a `partly_judged` property, their number.

Every clause is listed (report.md and report.html count the NOT APPLICABLE ones by reason instead). Control
characters are written escaped (`\\x00`): XML 1.0 cannot hold most of them at all (its Char production,
https://www.w3.org/TR/xml/#charsets), and ElementTree would write them raw into a file no parser reads."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from device_conformance.certify.report_text import visible
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, Certification


def render(cert: Certification) -> str:
    counts = cert.counts()
    suite = ET.Element(
        "testsuite",
        name=visible(f"certify {cert.subject.kind} {cert.subject.name}"),
        tests=str(len(cert.results)),
        failures=str(counts[FAIL]),
        errors="0",
        skipped=str(counts[NOT_APPLICABLE]),
        time=f"{sum(r.seconds for r in cert.results):.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("subject", cert.subject.name),
        ("subject.version", cert.subject.version),
        ("subject.command", cert.subject.command),
        ("api_versions", "; ".join(cert.api_versions)),
    ):
        ET.SubElement(props, "property", name=name, value=visible(value))
    if cert.partly_judged():
        ET.SubElement(props, "property", name="partly_judged", value=str(len(cert.partly_judged())))
    for result in cert.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"certify.{cert.subject.kind}",
            name=visible(f"{result.clause.id}: {result.clause.title}"),
            time=f"{result.seconds:.3f}",
        )
        if result.not_judged:  # first, where pytest's JUnit XML puts a test case's properties
            case_props = ET.SubElement(case, "properties")
            for note in result.not_judged:
                ET.SubElement(case_props, "property", name="not_judged", value=visible(note))
        if result.verdict == FAIL:
            ET.SubElement(case, "failure", message=visible(result.message)).text = result.clause.rule
        elif result.verdict == NOT_APPLICABLE:
            ET.SubElement(case, "skipped", message=visible(f"NOT APPLICABLE: {result.message}"))
        notes = [f"not judged: {note}" for note in result.not_judged]
        lines = [f"rule: {result.clause.rule}", f"source: {result.clause.source}", *notes, *result.evidence]
        ET.SubElement(case, "system-out").text = visible("\n".join(lines))
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
