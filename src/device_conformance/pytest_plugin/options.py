"""Command-line options, declared from settings.KNOBS: each also has an environment variable, so
`make e2e VAR=...` works. Values are resolved (option, else variable, else default) by settings.resolve().
Besides them --declared-json, a report of the collection (pytest_plugin/declared_json.py), not a setting."""

from __future__ import annotations

import pytest

from device_conformance.settings import KNOBS

IGNORE_KNOWN_BUGS = "--ignore-known-bugs"
# Vendor mode (pytest_plugin/vendor.py): where its certification report goes, and the subject's version.
REPORT_OPTION = "--vendor-report"
VERSION_OPTION = "--vendor-version"


def known_bugs_ignored(config: pytest.Config) -> bool:
    return bool(config.getoption(IGNORE_KNOWN_BUGS, default=False))


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("device-conformance", "kubelet device-management conformance")
    for knob in KNOBS.values():
        if knob.option is None:
            continue
        if knob.flag:
            group.addoption(knob.option, action="store_true", default=None, help=knob.help_text())
        elif knob.repeat:
            group.addoption(knob.option, action="append", default=None, help=knob.help_text())
        else:
            group.addoption(knob.option, default=None, help=knob.help_text())
    group.addoption(
        IGNORE_KNOWN_BUGS,
        action="store_true",
        default=False,
        help="judge every check as if no known bug affected the version under test: a check where a known bug "
        "shows fails instead of xfailing (what `device-conformance bisect` runs, so the outcome is the "
        "kubelet's own behaviour, not what the bug data expects)",
    )
    group.addoption(
        REPORT_OPTION,
        metavar="DIR",
        default="vendor-report",
        help="with --vendor-device-plugin / --vendor-dra-driver: the certification report folder (junit.xml, "
        "report.md, report.html, result.json; default vendor-report)",
    )
    group.addoption(VERSION_OPTION, default="", help="vendor mode: the subject's version, for the report")
    group.addoption(
        "--declared-json",
        metavar="PATH",
        default=None,
        help="write every collected test's declared scenarios, minimum versions and known bugs to PATH as JSON "
        "(what `device-conformance scenarios` reads)",
    )
