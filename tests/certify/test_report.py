"""The report folder (issue 12, part 3): JUnit XML, report.md, a self-contained report.html checked in headless
Chromium (a screenshot whose verdict colours are counted), result.json."""

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest
from png_pixels import colour_counts, decode

from device_conformance.certify.clauses import DEVICE_PLUGIN_CLAUSES
from device_conformance.certify.report import FILES, write_report
from device_conformance.certify.verdicts import FAIL, NOT_APPLICABLE, PASS, Certification, ClauseResult, Subject

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
    assert dom.count('class="verdict FAIL"') == 2 and dom.count('class="verdict NA"') == 2
    assert 'id="result">FAILED<' in dom
    assert dom.count("<details open") == 1, "the failed clause's evidence is shown unfolded, the others folded"

    shot = tmp_path / "report.png"
    render(browser, html_path, tmp_path, "--window-size=1200,900", f"--screenshot={shot}")
    width, height, _, _ = decode(shot.read_bytes())
    assert (width, height) == (1200, 900)
    colours = colour_counts(shot.read_bytes())
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
    real_colours = colour_counts(shot_real.read_bytes())
    assert real_colours[RED] == 0 and real_colours[GREEN] > 16 * 200, (real_colours[RED], real_colours[GREEN])
