"""The report folder: junit.xml, report.md, report.html, result.json."""

from __future__ import annotations

import json
from pathlib import Path

from device_conformance.certify import report_html, report_junit, report_markdown
from device_conformance.certify.verdicts import Certification

FILES = ("junit.xml", "report.md", "report.html", "result.json")


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
