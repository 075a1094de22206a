"""The report folder: JUnit XML, report.md, a self-contained report.html checked in headless
Chromium (a screenshot whose verdict colours are counted), result.json."""

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter

import pytest
from PIL import Image

from device_conformance.certify.clauses import DEVICE_PLUGIN_CLAUSES, Clause
from device_conformance.certify.report import FILES, write_report
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Certification, ClauseResult, Subject
from device_conformance.pytest_plugin.vendor import subject_log_evidence

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# The badge colours of report_html.CSS.
GREEN, RED, GREY = (0x1F, 0x7A, 0x34), (0xB4, 0x23, 0x18), (0x6B, 0x72, 0x80)


def mixed_certification():
    """One clause of each verdict, and text that must be escaped in every format."""
    clauses = DEVICE_PLUGIN_CLAUSES[:3]
    return Certification(
        Subject("device-plugin", "vendor <gpu> & co", "1.2.3", "run-plugin --x='1'"),
        ["deviceplugin/v1beta1"],
        [
            ClauseResult(clauses[0], PASS, "version 'v1beta1'", ['-> Register {"version": "v1beta1"}'], 0.5),
            ClauseResult(clauses[1], FAIL, "endpoint '<b>x</b>' is not a socket", ["<script>alert(1)</script>"], 1),
            ClauseResult(clauses[2], NOT_APPLICABLE, "not checked here", [], 0),
        ],
        started=1_700_000_000.0,
    )


def test_every_file_is_written_and_says_the_same(tmp_path):
    cert = mixed_certification()
    paths = write_report(cert, tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(FILES) == sorted(paths)

    result = json.loads(paths["result.json"].read_text())
    assert result["counts"] == {PASS: 1, FAIL: 1, NOT_APPLICABLE: 1} and result["passed"] is False
    assert [(c["id"], c["verdict"]) for c in result["clauses"]] == [
        ("DP-REG-VERSION", PASS),
        ("DP-REG-ENDPOINT", FAIL),
        ("DP-REG-RESOURCE", NOT_APPLICABLE),
    ]
    assert result["subject"] == {
        "kind": "device-plugin",
        "name": "vendor <gpu> & co",
        "version": "1.2.3",
        "command": "run-plugin --x='1'",
    }

    suite = ET.parse(paths["junit.xml"]).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["DP-REG-ENDPOINT: Register: endpoint"].find("failure").get("message") == (
        "endpoint '<b>x</b>' is not a socket"
    )
    assert "<script>alert(1)</script>" in cases["DP-REG-ENDPOINT: Register: endpoint"].find("system-out").text

    markdown = paths["report.md"].read_text()
    assert (
        "| DP-REG-ENDPOINT | **FAIL** |" in markdown
        and "Result: **FAILED**: 1 PASS, 1 FAIL, 1 NOT APPLICABLE" in markdown
    )

    html = paths["report.html"].read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "vendor &lt;gpu&gt; &amp; co" in html
    for external in ("http://", "https://", "<link", "src="):
        assert external not in html, f"report.html is not self-contained: {external}"


def colour_counts(png):
    """Counter of (r, g, b) over every pixel of a screenshot; also its (width, height)."""
    with Image.open(png) as image:
        rgb = image.convert("RGB")
    return Counter({colour: count for count, colour in rgb.getcolors(rgb.width * rgb.height)}), rgb.size


def chromium():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("chromium is not installed: `make chromium` (apt-get install chromium) to check report.html")
    return found


def render(browser, html_path, tmp_path, *extra):
    argv = [browser, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *extra, html_path.as_uri()]
    done = subprocess.run(argv, capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return done.stdout.decode()


def test_report_html_renders_in_headless_chromium(tmp_path, clean_device_plugin):
    browser = chromium()
    cert = mixed_certification()
    html_path = write_report(cert, tmp_path / "out")["report.html"]

    dom = render(browser, html_path, tmp_path, "--dump-dom")
    assert dom.count('class="verdict PASS"') == 2  # row badge and section badge
    # NOT APPLICABLE clauses: one badge over their section, counted by reason.
    assert dom.count('class="verdict FAIL"') == 2 and dom.count('class="verdict NA"') == 1
    assert 'id="result">FAILED<' in dom
    assert dom.count('<pre class="evidence-fail">') == 1, "the failed clause's evidence is shown, never folded"
    assert dom.count("<details") == 1, "the passed clause's evidence is folded"

    shot = tmp_path / "report.png"
    render(browser, html_path, tmp_path, "--window-size=1200,900", f"--screenshot={shot}")
    colours, size = colour_counts(shot)
    assert size == (1200, 900)
    # Badges and the FAILED banner are drawn in their colours: the stylesheet was applied.
    assert colours[GREEN] > 200 and colours[RED] > 2000 and colours[GREY] > 200, (
        colours[GREEN],
        colours[RED],
        colours[GREY],
    )

    # A real run's report: every clause a green badge, no red at all.
    real = write_report(clean_device_plugin, tmp_path / "real")["report.html"]
    shot_real = tmp_path / "real.png"
    render(browser, real, tmp_path, "--window-size=1200,2400", f"--screenshot={shot_real}")
    real_colours, _ = colour_counts(shot_real)
    assert real_colours[RED] == 0 and real_colours[GREEN] > 16 * 200, (real_colours[RED], real_colours[GREEN])


def _clause(n):
    return Clause(f"C-{n:02d}", f"title {n}", f"rule {n}", f"source {n}")


def many_not_applicable():
    """2 PASS, 1 FAIL and 60 NOT APPLICABLE (57 for one reason, 3 for another): a vendor e2e run's shape."""
    results = [ClauseResult(_clause(n), NOT_APPLICABLE, "needs our fake", [], 0) for n in range(57)]
    results += [ClauseResult(_clause(n), NOT_APPLICABLE, "a DRA test", [], 0) for n in range(57, 60)]
    results.insert(10, ClauseResult(_clause(60), PASS, "as required", ["seen"], 1))
    results.insert(30, ClauseResult(_clause(61), FAIL, "setup: 0 devices\nsecond line", ["E   assert 0 == 2"], 1))
    results.append(ClauseResult(_clause(62), PASS, "as required", [], 1))
    return Certification(Subject("device-plugin", "p", "1", ""), ["api"], results, started=1_700_000_000.0)


def test_a_report_opens_with_its_summary_and_counts_not_applicable_clauses_by_reason(tmp_path):
    paths = write_report(many_not_applicable(), tmp_path / "out")
    markdown = paths["report.md"].read_text()
    head, _, clauses = markdown.partition("\n## Failed clauses\n")
    summary = head.split("\n## Summary\n\n", 1)[1]
    assert summary.splitlines() == [
        "Ran 3 of 63 clauses: 2 passed, 1 failed; 60 NOT APPLICABLE (not run).",
        "",
        "Failed:",
        "",
        "- C-61 (title 61): setup: 0 devices",
        "",
        "| Clause | Verdict | Rule | Finding |",
        "|---|---|---|---|",
        "| C-60 | **PASS** | rule 60 | as required |",
        "| C-61 | **FAIL** | rule 61 | setup: 0 devices second line |",
        "| C-62 | **PASS** | rule 62 | as required |",
        "",
        "NOT APPLICABLE (60, not run), by reason:",
        "",
        "- 57 clause(s): needs our fake",
        "  Clauses: " + ", ".join(f"C-{n:02d}" for n in range(57)),
        "- 3 clause(s): a DRA test",
        "  Clauses: C-57, C-58, C-59",
    ]
    # The FAIL's evidence in a fenced block under it, before the passed clauses; no section per NOT APPLICABLE.
    assert clauses.startswith("\n### C-61: title 61 (FAIL)\n") and "```\nE   assert 0 == 2\n```" in clauses
    assert clauses.index("## Passed clauses") > clauses.index("E   assert 0 == 2")
    assert markdown.count("### ") == 3 and "(NOT APPLICABLE)" not in markdown

    html = paths["report.html"].read_text()
    assert html.count('<tr id="row-') == 3 and html.count("<section ") == 3
    assert '<pre class="evidence-fail">E   assert 0 == 2</pre>' in html
    assert "<li>57 clause(s): needs our fake<br>Clauses: C-00, C-01," in html
    # JSON and JUnit keep every clause.
    assert len(json.loads(paths["result.json"].read_text())["clauses"]) == 63
    suite = ET.parse(paths["junit.xml"]).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("63", "1", "60")


def control_certification():
    """One real plugin's device IDs are "\\x00".."\\x03"; its name holds an ANSI escape."""
    clauses = DEVICE_PLUGIN_CLAUSES[:2]
    ids = ["\x00", "\x01", "\x02", "\x03"]
    return Certification(
        Subject("device-plugin", "gpu\x1b[31m", "1", ""),
        ["api"],
        [
            ClauseResult(clauses[0], PASS, "as required", [f"ListAndWatch: {' '.join(ids)}"], 0),
            ClauseResult(clauses[1], FAIL, "lists IDs " + ", ".join(ids), ["dev:\x00"], 0),
        ],
        started=1_700_000_000.0,
    )


RAW_CONTROL = [chr(c) for c in (*range(0x09), *range(0x0B, 0x20), 0x7F)]


def test_control_characters_are_printed_escaped_with_a_warning_naming_the_values(tmp_path):
    paths = write_report(control_certification(), tmp_path / "out")
    for name in ("report.md", "report.html", "junit.xml"):
        text = paths[name].read_text()
        assert [c for c in RAW_CONTROL if c in text] == [], name
    warning = (
        "Warning: 6 value(s) hold control characters, printed escaped here (exact in result.json): "
        "gpu\\x1b[31m (subject name); \\x00 (DP-REG-VERSION evidence, DP-REG-ENDPOINT finding); "
        "\\x01 (DP-REG-VERSION evidence, DP-REG-ENDPOINT finding); \\x02 (DP-REG-VERSION evidence, "
        "DP-REG-ENDPOINT finding); \\x03 (DP-REG-VERSION evidence, DP-REG-ENDPOINT finding); "
        "dev:\\x00 (DP-REG-ENDPOINT evidence)"
    )
    markdown = paths["report.md"].read_text()
    assert f"\n> {warning}\n" in markdown
    assert "\n- DP-REG-ENDPOINT (Register: endpoint): lists IDs \\x00, \\x01, \\x02, \\x03\n" in markdown
    assert "```\nListAndWatch: \\x00 \\x01 \\x02 \\x03\n```" in markdown
    html = paths["report.html"].read_text()
    assert '<p class="warning" id="control-characters">Warning: 6 value(s)' in html
    assert "<h1>Certification of device-plugin gpu\\x1b[31m</h1>" in html
    suite = ET.parse(paths["junit.xml"]).getroot()  # XML 1.0 cannot hold them raw: it parses
    assert suite.find("testcase/failure").get("message") == "lists IDs \\x00, \\x01, \\x02, \\x03"
    result = json.loads(paths["result.json"].read_text())
    assert result["clauses"][1]["message"] == "lists IDs \x00, \x01, \x02, \x03"
    assert result["subject"]["name"] == "gpu\x1b[31m"


def test_a_failed_run_shows_the_last_20_lines_of_the_subject_log_its_notes_name(tmp_path):
    log = tmp_path / "subject-1" / "subject.log"
    log.parent.mkdir()
    log.write_text("".join(f"line {n}\n" for n in range(30)) + "bell \x07\n")
    cert = mixed_certification()
    cert.notes += ["subject process: started 1 time(s), exited 0", f"subject log: {log}"]
    paths = write_report(cert, tmp_path / "out")
    tail = ["line 11", *(f"line {n}" for n in range(12, 30)), "bell \\x07"]
    markdown = paths["report.md"].read_text()
    block = "\n".join(["## Subject log (tail)", "", f"Last 20 lines of `{log}`:", "", "```", *tail, "```"])
    assert f"\n{block}\n" in markdown
    assert markdown.index("## Subject log (tail)") < markdown.index("## Passed clauses")
    warning = "Warning: 1 value(s) hold control characters, printed escaped here (exact in result.json): \\x07"
    assert f"\n> {warning} (subject log)\n" in markdown
    html = paths["report.html"].read_text()
    assert f"<pre>{chr(10).join(tail)}</pre>" in html

    cert.results = [r for r in cert.results if r.verdict != FAIL]  # no FAIL: no log in the report
    paths = write_report(cert, tmp_path / "passed")
    assert "Subject log" not in paths["report.md"].read_text() + paths["report.html"].read_text()


def test_vendor_mode_takes_the_subject_log_tail_from_the_failed_test_report_sections():
    output = "command: my-plugin\nstarts: 2\n--- output (last 80 lines) ---\n" + "\n".join(
        f"log {n}" for n in range(30)
    )
    sections = [("Captured stdout call", "noise"), ("vendor device plugin vendor.com/gpu", output)]
    assert subject_log_evidence(sections) == [
        "--- subject log (vendor device plugin vendor.com/gpu), last 20 lines ---",
        *(f"log {n}" for n in range(10, 30)),
    ]
    daemonset = "DaemonSet: ns/ds\nstarts: 1\nactions: \n--- log of pod-1 (last 80 lines) ---\n(no output yet)"
    assert subject_log_evidence([("vendor DRA driver gpu.vendor.com", daemonset)]) == [
        "--- subject log (vendor DRA driver gpu.vendor.com), last 20 lines ---",
        "(no output yet)",
    ]
    assert subject_log_evidence([("kubelet log since test start (last 200 lines)", "x")]) == []


pytest_plugins = ["pytester"]


def test_a_vendor_run_report_shows_the_subject_log_tail_under_its_fail(pytester):
    """The whole path: a vendor-mode test fails, the fixture's subject section (attach_on_failure) is in its
    report, and report.md shows the last 20 lines of the subject's output in the FAIL's evidence."""
    pytester.makepyfile(
        test_subject="""
        import pytest
        from device_conformance.fixtures.reports import attach_on_failure

        @pytest.fixture
        def subject(request):
            log = "\\n".join(f"subject line {n}" for n in range(30))
            output = f"command: my-plugin\\nstarts: 1\\n--- output (last 80 lines) ---\\n{log}"
            attach_on_failure(request.node, "vendor device plugin vendor.com/gpu", lambda: output)

        @pytest.mark.vendor_blackbox("device-plugin")
        def test_blackbox_broken(subject):
            assert 1 == 2, "the subject broke it"
        """
    )
    out = pytester.path / "report"
    argv = ["-p", "no:cacheprovider", "--vendor-device-plugin", "vendor.com/gpu", "--vendor-command", "my-plugin"]
    pytester.runpytest(*argv, "--vendor-report", str(out)).assert_outcomes(failed=1)
    (clause,) = json.loads((out / "result.json").read_text())["clauses"]
    marker = "--- subject log (vendor device plugin vendor.com/gpu), last 20 lines ---"
    assert clause["evidence"][clause["evidence"].index(marker) :] == [
        marker,
        *(f"subject line {n}" for n in range(10, 30)),
    ]
    markdown = (out / "report.md").read_text()
    assert "\n".join([marker, *(f"subject line {n}" for n in range(10, 30)), "```"]) in markdown
    assert markdown.index(marker) < markdown.index("## Notes")
