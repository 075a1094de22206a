"""Vendor mode of the suites: `--vendor-device-plugin RESOURCE` / `--vendor-dra-driver DRIVER`
with `--vendor-command` run the black-box tests against the vendor's subject, and write a certification report.

- Only tests marked `vendor_blackbox(KIND)` for the subject's kind run. Every other test drives or reads our
  fakes (fault injection, call logs, devices of its choosing) or does not involve the subject: it is skipped
  at collection as NOT APPLICABLE with the reason, never run and never passed.
- `upstream:<name>` commands are built from the Go module of the version under test when collection is done
  (certify/upstream.py), before the first test, like the Kubernetes binaries.
- At the end the run writes `--vendor-report DIR` (default vendor-report/): junit.xml, report.md, report.html,
  result.json with every test PASS / FAIL / NOT APPLICABLE, through the certifier's report writers. A test that
  passed with checks that could not judge the subject (fixtures/reports.py not_judged) is a PASS with those
  checks listed as not judged, never a plain PASS.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

import pytest

from device_conformance.certify.clauses import Clause
from device_conformance.certify.report import write_report
from device_conformance.certify.report_markdown import summary_table
from device_conformance.certify.report_text import partly_judged_part
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Certification, ClauseResult, Subject
from device_conformance.core.errors import BadInput, ConformanceError
from device_conformance.fixtures.reports import NOT_JUDGED, not_judged_notes
from device_conformance.fixtures.session import say, session_settings
from device_conformance.fixtures.vendor import VENDOR_BINARY, VENDOR_TEMPLATE
from device_conformance.pytest_plugin.options import REPORT_OPTION, VERSION_OPTION
from device_conformance.settings import KNOBS
from device_conformance.vendor.spec import DEVICE_PLUGIN, VendorSpec, upstream_template

MARKER = "vendor_blackbox"
SPEC = pytest.StashKey[VendorSpec | None]()
RESULTS = pytest.StashKey[dict[str, ClauseResult]]()
STARTED = pytest.StashKey[float]()
E2E_MODE = "e2e: the suites' black-box tests on a real cluster (provider {provider}, Kubernetes {version})"
EVIDENCE_LINES = 40
# The report sections fixtures/vendor.py attaches for the subject (attach_on_failure), and the marker line its
# handles' report() puts before the subject's output (vendor/handles.py: "--- output (last 80 lines) ---").
SUBJECT_SECTIONS = ("vendor device plugin ", "vendor DRA driver ")
SUBJECT_LOG_LINES = 20


def _vendor_given(config: pytest.Config) -> bool:
    names = ("vendor_device_plugin", "vendor_dra_driver", "vendor_command", "vendor_daemonset")
    return any(config.getoption(KNOBS[n].option) or os.environ.get(KNOBS[n].env or "") for n in names)


def vendor_of(config: pytest.Config) -> VendorSpec | None:
    """The run's vendor subject (None: our fakes); a bad option is a usage error naming the fix."""
    if SPEC not in config.stash:
        spec = None
        if _vendor_given(config):
            try:
                spec = session_settings(config).vendor.value
            except BadInput as exc:
                raise pytest.UsageError(f"device-conformance settings: {exc}") from None
        config.stash[SPEC] = spec
    return config.stash[SPEC]


def not_applicable(item: pytest.Item, spec: VendorSpec) -> str | None:
    """Why `item` does not run against the subject, or None when it does."""
    marker = item.get_closest_marker(MARKER)
    kind = "a device plugin" if spec.kind == DEVICE_PLUGIN else "a DRA driver"
    if marker is None:
        return (
            f"NOT APPLICABLE in vendor mode ({spec.option} {spec.name}): this test drives or reads our fake "
            "(fault injection, call log, devices of its choosing) or does not involve the subject; only "
            f"`{MARKER}` tests run against {kind}"
        )
    if spec.kind not in marker.args:
        return f"NOT APPLICABLE in vendor mode: a black-box test of {' and '.join(marker.args)}; the subject is {kind}"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marker = item.get_closest_marker(MARKER)
        if marker is not None:
            _check_marker(item, marker)
    spec = vendor_of(config)
    if spec is None:
        return
    for item in items:
        doc = inspect.getdoc(getattr(item, "function", None)) or ""
        item.user_properties.append(("vendor.rule", doc.split("\n\n")[0].replace("\n", " ") or item.name))
        scenarios = [a for m in item.iter_markers("scenario") for a in m.args]
        where = item.nodeid.split("::")[0]
        shown = f" (scenarios {', '.join(scenarios)})" if scenarios else ""
        item.user_properties.append(("vendor.source", where + shown))
        reason = not_applicable(item, spec)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def _check_marker(item: pytest.Item, marker: pytest.Mark) -> None:
    from device_conformance.vendor.spec import DRA_DRIVER

    kinds = (DEVICE_PLUGIN, DRA_DRIVER)
    if not marker.args or any(a not in kinds for a in marker.args):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.{MARKER}{marker.args!r}: name the subject kinds the test runs against, "
            f"one or more of {kinds}"
        )


def pytest_collection_finish(session: pytest.Session) -> None:
    """The subject's command template, with an upstream subject built now (before any test)."""
    config = session.config
    if config.option.collectonly or sys.exc_info()[0] is not None or session.testsfailed:
        return
    spec = vendor_of(config)
    if spec is None:
        return
    runs = [i for i in session.items if i.get_closest_marker(MARKER) and not_applicable(i, spec) is None]
    if not runs:
        say(config, f"vendor mode: no black-box test of a {spec.kind} selected; every test is NOT APPLICABLE")
    upstream = spec.upstream
    if upstream is None:
        config.stash[VENDOR_TEMPLATE] = spec.command
        return
    if not runs:
        return
    from device_conformance.certify import upstream as builds

    version = session_settings(config).k8s_version.value
    build = builds.build_sample_device_plugin if upstream == "sample-device-plugin" else builds.build_dra_test_driver
    try:
        binary = build(version, lambda m: say(config, m))
    except ConformanceError as exc:
        raise pytest.UsageError(f"could not build upstream subject {upstream} at {version}:\n{exc}") from None
    if spec.daemonset:
        # Deployed as a DaemonSet by the `vendor_daemonset` fixture (fixtures/vendor.py), in an image of it.
        config.stash[VENDOR_BINARY] = binary
        config.stash[VENDOR_TEMPLATE] = ""
    else:
        config.stash[VENDOR_TEMPLATE] = upstream_template(upstream, str(binary))
    say(config, f"vendor mode: {spec.describe()}, binary {binary}")


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[RESULTS] = {}
    session.config.stash[STARTED] = time.time()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    config = _CONFIG[0] if _CONFIG else None
    if config is None or RESULTS not in config.stash or not _vendor_given(config):
        return
    results = config.stash[RESULTS]
    props = dict(report.user_properties)
    if "vendor.rule" not in props:
        return
    name = report.nodeid.split("::", 1)[-1]
    clause = Clause(report.nodeid, name, str(props["vendor.rule"]), str(props.get("vendor.source", "")))
    current = results.get(report.nodeid)
    verdict, message, evidence = _verdict(report)
    if verdict is None:
        return
    if verdict == FAIL:
        evidence += subject_log_evidence(report.sections)
    if current is not None and current.verdict == FAIL:
        return  # a failed call stays failed whatever teardown did
    if current is not None and report.when == "teardown" and verdict == PASS:
        return
    results[report.nodeid] = clause_result(clause, verdict, message, evidence, report)


def clause_result(
    clause: Clause, verdict: str, message: str, evidence: list[str], report: pytest.TestReport
) -> ClauseResult:
    """The test's verdict with what it recorded about the subject (request.node.user_properties): its checks that
    could not judge the subject (NOT_JUDGED), and the rest as evidence. Of a test that did not run, only why: its
    scenario and version markers are no evidence, and NOT APPLICABLE says all."""
    if verdict == NOT_APPLICABLE:
        return ClauseResult(clause, verdict, message, evidence, report.duration)
    props = [(str(key), value) for key, value in report.user_properties]
    noted = [f"{key}: {value}" for key, value in props if not key.startswith("vendor.") and key != NOT_JUDGED]
    return ClauseResult(
        clause, verdict, message, [*noted, *evidence], report.duration, not_judged=not_judged_notes(props)
    )


def _verdict(report: pytest.TestReport) -> tuple[str | None, str, list[str]]:
    if report.skipped:
        if hasattr(report, "wasxfail"):
            return NOT_APPLICABLE, f"expected failure (known kubelet bug): {report.wasxfail}", []
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return NOT_APPLICABLE, reason.removeprefix("Skipped: "), []
    if report.failed:
        text = report.longreprtext.splitlines()
        message = next((line for line in text if line.startswith("E ")), text[-1] if text else "failed")
        return FAIL, f"{report.when}: {message.removeprefix('E ').strip()}", text[-EVIDENCE_LINES:]
    if report.when == "call":
        if hasattr(report, "wasxfail"):
            return FAIL, f"passed where a known kubelet bug was expected: {report.wasxfail}", []
        return PASS, "as required", []
    return None, "", []


def subject_log_evidence(sections: Iterable[tuple[str, str]], lines: int = SUBJECT_LOG_LINES) -> list[str]:
    """The subject's log tail from a failed test's report sections, as evidence lines ([] without one)."""
    for title, text in sections:
        if title.startswith(SUBJECT_SECTIONS):
            log = text.splitlines()
            starts = [n for n, line in enumerate(log) if line.startswith("--- ") and line.endswith(" ---")]
            tail = log[starts[-1] + 1 :] if starts else log
            return [f"--- subject log ({title}), last {lines} lines ---", *tail[-lines:]]
    return []


_CONFIG: list[pytest.Config] = []


def pytest_configure(config: pytest.Config) -> None:
    # pytest_runtest_logreport gets no config; this module is registered once per pytest process.
    _CONFIG[:] = [config]


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if config.option.collectonly or hasattr(config, "workerinput") or RESULTS not in config.stash:
        return
    if not _vendor_given(config):
        return
    try:
        spec = vendor_of(config)
    except pytest.UsageError:
        return
    if spec is None:
        return
    settings = session_settings(config)
    cert = certification(
        spec,
        config.stash[RESULTS].values(),
        version=config.getoption(VERSION_OPTION) or "",
        command=f"DaemonSet {spec.daemonset}" if spec.daemonset else config.stash.get(VENDOR_TEMPLATE, spec.command),
        k8s_version=str(settings.k8s_version.value),
        provider=settings.provider.value,
        started=config.stash[STARTED],
    )
    out = Path(config.getoption(REPORT_OPTION))
    write_report(cert, out)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        counts = ", ".join(f"{n} {v}" for v, n in cert.counts().items()) + partly_judged_part(cert, "PASS")
        reporter.write_line(f"[device-conformance] vendor report in {out}/: {counts}")
        for result in cert.partly_judged():
            for note in result.not_judged:
                reporter.write_line(f"[device-conformance] {result.clause.id}: not judged: {note}")


def certification(
    spec: VendorSpec,
    results: Iterable[ClauseResult],
    *,
    version: str,
    command: str,
    k8s_version: str,
    provider: str,
    started: float,
) -> Certification:
    """The e2e run as a Certification, for the certifier's report writers (one clause per test)."""
    name = spec.name if spec.upstream is None else f"{spec.name} ({spec.daemonset or spec.command})"
    api = "device plugin API v1beta1" if spec.kind == DEVICE_PLUGIN else "DRA kubelet plugin API v1"
    ordered = sorted(results, key=lambda r: (r.verdict != FAIL, r.verdict != PASS, r.clause.id))
    cert = Certification(
        Subject(spec.kind, name, version, command),
        [f"Kubernetes {k8s_version}", api],
        ordered,
        started=started,
        finished=time.time(),
        mode=E2E_MODE.format(provider=provider, version=k8s_version),
    )
    cert.notes.append(
        "NOT APPLICABLE tests need what only our fakes can do (fault injection, their call log, devices of "
        "their choosing) or do not involve a subject of this kind; they were not run."
    )
    if cert.partly_judged():
        cert.notes.append(
            "A PASS with checks not judged judged the rest of its test; each of those checks had nothing of this "
            "subject to judge (the note says why, e.g. a claim prepared with no CDI device), so it neither passed "
            "nor failed."
        )
    return cert


__all__ = ["certification", "not_applicable", "summary_table", "vendor_of"]
