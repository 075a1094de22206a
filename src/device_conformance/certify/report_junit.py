"""JUnit XML: one testsuite per certification, one testcase per clause (FAIL = failure, NOT APPLICABLE =
skipped), evidence in system-out; CI systems render it without knowing anything about this tool."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, Certification


def render(cert: Certification) -> str:
    counts = cert.counts()
    suite = ET.Element(
        "testsuite",
        name=f"certify {cert.subject.kind} {cert.subject.name}",
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
        ET.SubElement(props, "property", name=name, value=value)
    for result in cert.results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"certify.{cert.subject.kind}",
            name=f"{result.clause.id}: {result.clause.title}",
            time=f"{result.seconds:.3f}",
        )
        if result.verdict == FAIL:
            ET.SubElement(case, "failure", message=result.message).text = result.clause.rule
        elif result.verdict == NOT_APPLICABLE:
            ET.SubElement(case, "skipped", message=f"NOT APPLICABLE: {result.message}")
        lines = [f"rule: {result.clause.rule}", f"source: {result.clause.source}", *result.evidence]
        ET.SubElement(case, "system-out").text = "\n".join(lines)
    ET.indent(suite)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
